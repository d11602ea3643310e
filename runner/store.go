package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/workloads"
)

// newRunDir creates <store>/<scenario>/<timestamp>/ (Jepsen's layout) and
// points <store>/<scenario>/latest and <store>/latest at it.
func newRunDir(store, scenario string) (string, error) {
	// Servers run in their own directories: every path must be absolute.
	store, err := filepath.Abs(store)
	if err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	// A latest that is no link (a directory a scenario named latest made
	// before such names were refused) would fail every run after the run
	// directory was made.
	if fi, err := os.Lstat(filepath.Join(store, latestLink)); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		return "", fmt.Errorf("%s is not a link: locktest points it at the latest run; move it out of the store", filepath.Join(store, latestLink))
	}
	base := filepath.Join(store, scenario)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("create store: %w", err)
	}
	stamp := time.Now().Format("20060102T150405.000")
	dir := filepath.Join(base, stamp)
	for i := 1; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) || i > 100 {
			return "", fmt.Errorf("create run dir: %w", err)
		}
		dir = filepath.Join(base, fmt.Sprintf("%s-%d", stamp, i))
	}
	rel := filepath.Base(dir)
	for link, target := range map[string]string{filepath.Join(base, latestLink): rel, filepath.Join(store, latestLink): filepath.Join(scenario, rel)} {
		if err := relink(link, target); err != nil {
			discardRunDir(store, scenario, dir)
			return "", err
		}
	}
	return dir, nil
}

// discardRunDir removes a run directory that holds nothing worth keeping
// (bad input found after it was made) and the latest links to it.
func discardRunDir(store, scenario, dir string) {
	store, err := filepath.Abs(store)
	if err != nil {
		return
	}
	base := filepath.Join(store, scenario)
	for link, target := range map[string]string{
		filepath.Join(base, latestLink):  filepath.Base(dir),
		filepath.Join(store, latestLink): filepath.Join(scenario, filepath.Base(dir)),
	} {
		if t, err := os.Readlink(link); err == nil && t == target {
			os.Remove(link)
		}
	}
	os.RemoveAll(dir)
	os.Remove(base) // only if empty: the scenario's first run
}

// relink atomically points link at target. A link that cannot be
// replaced (a directory in its place) leaves no temporary link behind.
func relink(link, target string) error {
	tmp := fmt.Sprintf("%s.tmp%d", link, os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("link %s: %w", link, err)
	}
	return nil
}

// ConfigFile holds the scenario of a run, written before anything starts
// so that even a killed run can be analyzed.
const ConfigFile = "config.json"

// storedRun is config.json: the settings, and beside them what analyze
// needs that the settings only name. The design rides along because the
// binary that analyzes may not have it: a design registered in a user's
// own main is unknown to the stock locktest, whose check needs only the
// history, the workload and these few facts.
type storedRun struct {
	Config
	// Locktest is the build that started the run, for the record.
	Locktest string `json:"locktest,omitempty"`
	// Design is what the run's design was; absent in runs stored before
	// it was kept.
	Design *storedDesign `json:"design,omitempty"`
	// Reproduce is the command that runs the scenario again.
	Reproduce string `json:"reproduce,omitempty"`
}

// storedDesign is the part of an impls.Design a stored run's analysis
// uses: the servers it ran (their versions go in the results) and whether
// the workload's data lived in the lock service instead of a resource node.
type storedDesign struct {
	Binaries     map[string]string `json:"binaries,omitempty"`
	GuardsWrites bool              `json:"guards_writes,omitempty"`
}

// configJSON is the content of config.json. A run encodes it before it
// makes its directory: settings that cannot be stored leave no run
// directory and no latest link behind.
func configJSON(cfg Resolved) ([]byte, error) {
	data, err := json.MarshalIndent(storedRun{Config: cfg.Config, Locktest: reports.CurrentBuild().String(),
		Design:    &storedDesign{Binaries: cfg.Design.Binaries, GuardsWrites: cfg.Design.GuardsWrites},
		Reproduce: cfg.reproduce()}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return append(data, '\n'), nil
}

func writeConfig(dir string, data []byte) error {
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), data, 0o644); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// readConfig reads a stored run's config.json, settings missing from it
// at their defaults.
func readConfig(dir string) (storedRun, error) {
	run := storedRun{Config: Defaults()}
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
	run, err := readConfig(dir)
	return run.Config, err
}

// LoadRun reads the scenario of a stored run for analysis. It looks up
// the workload, which decides the verdict, and nothing else: the design
// comes from config.json (or, for a run stored before the design was
// kept there, the registry, else its name alone), the faults stay names.
// So a run of any design, registered in whichever binary ran it, is
// checked from its history by any locktest.
func LoadRun(dir string) (Resolved, error) {
	run, err := readConfig(dir)
	if err != nil {
		return Resolved{}, &BadConfigError{err}
	}
	path := filepath.Join(dir, ConfigFile)
	if err := run.Check(); err != nil {
		msg, field := FieldTerms(err.Error())
		return Resolved{}, bad("%s: field %s: %s; the file is damaged, or was not written by locktest run", path, field, msg)
	}
	r := Resolved{Config: run.Config, Reproduce: run.Reproduce}
	if r.Workload, err = workloads.Lookup(run.Workload); err != nil {
		return r, bad("%s: %v", path, err)
	}
	switch d, err := impls.Lookup(run.Impl); {
	case run.Design != nil:
		r.Design = impls.Design{Name: run.Impl, Binaries: run.Design.Binaries, GuardsWrites: run.Design.GuardsWrites}
	case err == nil:
		r.Design = d
	default:
		r.Design = impls.Design{Name: run.Impl}
	}
	return r, nil
}

// holdRunDir takes an exclusive flock on the run directory for as long as
// the returned file stays open (the run). The kernel drops the lock when
// the coordinator exits, however it exits, so a reader (locktest serve)
// tells a run in progress from one killed midway: both have a history and
// no results. The workers and servers do not inherit the descriptor
// (close-on-exec).
func holdRunDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("hold run dir: %w", err)
	}
	// Blocking: a reader's probe holds a shared lock for microseconds.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("hold run dir %s: %w", dir, err)
	}
	return f, nil
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
