package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// newRunDir creates <store>/<scenario>/<timestamp>/ (Jepsen's layout) and
// points <store>/<scenario>/latest and <store>/latest at it. madeStore
// says whether the store itself was made, so that a run discarded later
// removes it too.
func newRunDir(store, scenario string) (dir string, madeStore bool, err error) {
	// Servers run in their own directories: every path must be absolute.
	if store, err = filepath.Abs(store); err != nil {
		return "", false, fmt.Errorf("store: %w", err)
	}
	_, err = os.Stat(store)
	madeStore = os.IsNotExist(err)
	// A latest that is no link (a directory a scenario named latest made
	// before such names were refused) would fail every run after the run
	// directory was made.
	if fi, err := os.Lstat(filepath.Join(store, latestLink)); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		return "", false, fmt.Errorf("%s is not a link: locktest points it at the latest run; move it out of the store", filepath.Join(store, latestLink))
	}
	base := filepath.Join(store, scenario)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", false, fmt.Errorf("create store: %w", err)
	}
	stamp := time.Now().Format("20060102T150405.000")
	dir = filepath.Join(base, stamp)
	for i := 1; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) || i > 100 {
			return "", false, fmt.Errorf("create run dir: %w", err)
		}
		dir = filepath.Join(base, fmt.Sprintf("%s-%d", stamp, i))
	}
	rel := filepath.Base(dir)
	for link, target := range map[string]string{filepath.Join(base, latestLink): rel, filepath.Join(store, latestLink): filepath.Join(scenario, rel)} {
		if err := relink(link, target); err != nil {
			discardRunDir(store, scenario, dir, madeStore)
			return "", false, err
		}
	}
	return dir, madeStore, nil
}

// discardRunDir removes a run directory that holds nothing worth keeping
// (bad input found after it was made), the latest links to it, and the
// store when the run made it (madeStore) and nothing else is in it.
func discardRunDir(store, scenario, dir string, madeStore bool) {
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
	if madeStore {
		os.Remove(store) // only if empty: no other run began in it meanwhile
	}
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

// configJSON is the content of config.json. A run encodes it before it
// makes its directory: settings that cannot be stored leave no run
// directory and no latest link behind.
func configJSON(cfg Resolved) ([]byte, error) {
	data, err := json.MarshalIndent(scenario.Stored{Config: cfg.Config, Locktest: reports.CurrentBuild().String(),
		Design:    &scenario.StoredDesign{Binaries: cfg.Design.Binaries, GuardsWrites: cfg.Design.GuardsWrites},
		Reproduce: cfg.reproduce(), NetworkNote: cfg.NetworkNote}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return append(data, '\n'), nil
}

func writeConfig(dir string, data []byte) error {
	if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), data, 0o644); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// LoadRun reads the scenario of a stored run for analysis. It looks up
// the workload, which decides the verdict, and nothing else: the design
// comes from config.json (or, for a run stored before the design was
// kept there, the registry), the faults stay names. So a run of any
// design, registered in whichever binary ran it, is checked from its
// history by any locktest; names no run could have had are refused
// (checkStoredNames).
func LoadRun(dir string) (Resolved, error) {
	run, err := scenario.Read(dir)
	if err != nil {
		return Resolved{}, &BadConfigError{err}
	}
	path := filepath.Join(dir, scenario.ConfigFile)
	if err := Check(run.Config); err != nil {
		msg, field := scenario.FieldTerms(err.Error())
		return Resolved{}, bad("%s: field %s: %s; the file is damaged, or was not written by locktest run", path, field, msg)
	}
	r := Resolved{Config: run.Config, Reproduce: run.Reproduce, NetworkNote: run.NetworkNote}
	if r.Network == "" {
		// Every run records the network it used; one stored before netns
		// was the default and recorded none used the proxy.
		r.Network = NetworkProxy
	}
	if r.Workload, err = workloads.Lookup(run.Workload); err != nil {
		return r, bad("%s: %v", path, err)
	}
	if err := checkStoredNames(run); err != nil {
		return r, bad("%s: %v; the file is damaged, or was not written by locktest run", path, err)
	}
	switch d, err := impls.Lookup(run.Impl); {
	case run.Design != nil:
		r.Design = impls.Design{Name: run.Impl, Binaries: run.Design.Binaries, GuardsWrites: run.Design.GuardsWrites}
	case err == nil:
		r.Design = d
	}
	return r, nil
}

// checkStoredNames refuses a config.json whose impl and faults no run
// could have had. A name this binary does not register is a design (or
// fault) of a user's own binary only when the file carries the design
// block every run writes (a run of the stock locktest names a design it
// has), and its reproduce command, when it names an impl, names the same
// one: otherwise the name was edited, and the verdict would be on a run
// that never was. An exec run needs the program it drove.
func checkStoredNames(run scenario.Stored) error {
	_, lookupErr := impls.Lookup(run.Impl)
	own := lookupErr != nil // a design of the user's own binary, if any
	switch {
	case own && run.Design == nil:
		return fmt.Errorf("field impl: %v, and the file has no design block saying what it was: analyze the run with the binary that has the design", lookupErr)
	case own && CheckName(impls.FileName(run.Impl)) != nil: // the name a design's directories take
		return fmt.Errorf("field impl: %q is not a name a design can have", run.Impl)
	case run.Impl == impls.ExecName && run.ExecCmd == "":
		return fmt.Errorf("field exec_cmd: an %s run drives a program, and the file names none", impls.ExecName)
	}
	if impl, ok := reproducedImpl(run.Reproduce); ok && impl != run.Impl {
		return fmt.Errorf("field impl: %q, but the reproduce command runs --impl %s", run.Impl, impl)
	}
	for _, item := range run.Faults {
		if _, err := faults.LookupItem(item); err != nil && !own {
			return fmt.Errorf("field faults: %v (the run's design %s is this binary's, so its faults are too)", err, run.Impl)
		}
	}
	return nil
}

// reproducedImpl is the impl a reproduce command line runs, if it names
// one (a locktest run command does; a go test command does not).
func reproducedImpl(cmd string) (string, bool) {
	args := strings.Fields(cmd)
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--impl="); ok {
			return v, true
		}
		if a == "--impl" && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
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
