package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ConfigFile holds the scenario of a run, written before anything starts
// so that even a killed run can be analyzed.
const ConfigFile = "config.json"

// Stored is config.json: the settings, and beside them what analyze
// needs that the settings only name. The design rides along because the
// binary that analyzes may not have it: a design registered in a user's
// own main is unknown to the stock locktest, whose check needs only the
// history, the workload and these few facts.
type Stored struct {
	Config
	// Locktest is the build that started the run, for the record.
	Locktest string `json:"locktest,omitempty"`
	// Design is what the run's design was; absent in runs stored before
	// it was kept.
	Design *StoredDesign `json:"design,omitempty"`
	// Reproduce is the command that runs the scenario again.
	Reproduce string `json:"reproduce,omitempty"`
	// NetworkNote says why a run that asked for --network netns used the
	// proxy (its network field says proxy).
	NetworkNote string `json:"network_note,omitempty"`
}

// StoredDesign is the part of an impls.Design a stored run's analysis
// uses: the servers it ran (their versions go in the results) and whether
// the workload's data lived in the lock service instead of a resource node.
type StoredDesign struct {
	Binaries     map[string]string `json:"binaries,omitempty"`
	GuardsWrites bool              `json:"guards_writes,omitempty"`
}

// Read reads a stored run's config.json, settings missing from it
// at their defaults.
func Read(dir string) (Stored, error) {
	run := Stored{Config: Defaults()}
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return run, fmt.Errorf("%s is not a run directory: %w", dir, err)
	}
	if err := json.Unmarshal(data, &run); err != nil {
		return run, fmt.Errorf("read %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	return run, nil
}

// LoadConfig reads the settings of a stored run.
func LoadConfig(dir string) (Config, error) {
	run, err := Read(dir)
	return run.Config, err
}

// InProgress reports whether the run directory dir (open) belongs to a run
// whose coordinator is still alive: it holds the directory's lock.
func InProgress(dir *os.File) bool {
	err := unix.Flock(int(dir.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(dir.Fd()), unix.LOCK_UN)
	return false
}
