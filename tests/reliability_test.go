package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// sleepsOf lists the live sleep processes whose argument starts with
// marker (not the coordinator, whose command line holds the marker too).
func sleepsOf(t *testing.T, marker string) []string {
	t.Helper()
	var found []string
	for _, p := range ourProcesses(t, marker) {
		if strings.Contains(p, ": sleep "+marker) {
			found = append(found, p)
		}
	}
	return found
}

// TestExecTreeDiesWithRun: a lock program that leaves a child in the
// background and a double-forked daemon in a session of its own, in every
// worker. Whether the run ends, is interrupted or its coordinator is
// killed (SIGKILL: no code of the coordinator runs, and the workers die by
// their parent-death signal before they can reap), none of them may
// outlive it.
func TestExecTreeDiesWithRun(t *testing.T) {
	const marker = "98765."
	script := "sh -c 'sleep " + marker + "1 & (setsid sleep " + marker + "2 &); exec python3 " +
		filepath.Join(protocolDir, "redislock.py") + "'"
	for _, sig := range []syscall.Signal{0, syscall.SIGINT, syscall.SIGKILL} {
		name := "run ends"
		if sig != 0 {
			name = sig.String()
		}
		t.Run(name, func(t *testing.T) {
			if sig == syscall.SIGKILL {
				if err := cluster.RunCgroupSupport(); err != nil {
					t.Skipf("only a run cgroup holds what left its session once the coordinator is killed, and there is none here: %v", err)
				}
			}
			store := filepath.Join(t.TempDir(), "store")
			cmd := exec.Command(binary, "run", "--impl", "exec", "--exec-servers", "redis-single", "--exec-cmd", script,
				"--clients", "3", "--duration", "3s", "--store", store)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			deadline := time.Now().Add(30 * time.Second)
			for len(sleepsOf(t, marker)) < 6 {
				if time.Now().After(deadline) {
					t.Fatalf("the lock programs' children did not start: %v", sleepsOf(t, marker))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if sig != 0 {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if sig == syscall.SIGINT && (!errors.As(err, &ee) || ee.ExitCode() != 130) {
				t.Fatalf("after %s: %v, want exit 130", sig, err)
			}
			assertNothingLeft(t, store, marker)
		})
	}
}

// TestLogsAreCapped: a lock program that floods its stderr fills each
// worker log up to the cap (10 MB), no further, with a note at the end,
// and the report says so. The flood dies with the run.
func TestLogsAreCapped(t *testing.T) {
	const limit = 10 << 20
	r := locktest(t, "run", "--impl", "exec", "--exec-servers", "none", "--exec-cmd", "sh -c 'yes errspam98765 >&2'",
		"--clients", "2", "--duration", "1s")
	r.assertNothingLeft(t)
	assertNothingLeft(t, "errspam98765")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2 (unknown: the lock program never answered)", r.code)
	}
	logs, _ := filepath.Glob(filepath.Join(r.store, "latest", reports.WorkerLogDir, "*.log"))
	if len(logs) != 2 {
		t.Fatalf("worker logs %v, want 2", logs)
	}
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > limit+100 {
			t.Errorf("%s: %d bytes, over the %d byte cap", l, len(data), limit)
		}
		tail := data[max(0, len(data)-100):]
		if !bytes.Contains(tail, []byte("[truncated: ")) || !bytes.HasSuffix(tail, []byte(" bytes dropped]\n")) {
			t.Errorf("%s does not end with a truncation note: %q", l, tail)
		}
	}
	notes := strings.Join(r.results(t).Notes, "\n")
	if strings.Count(notes, "reached its limit") != 2 {
		t.Fatalf("results notes do not name both capped logs:\n%s", notes)
	}
	if !strings.Contains(r.stdout, "reached its limit") {
		t.Fatal("the summary does not say the logs were cut")
	}
}

// interrupt starts a run, waits until ready says the phase to interrupt
// has come, sends SIGINT and requires exit 130 within 2 s and nothing
// left running. It returns the run directory.
func interrupt(t *testing.T, store string, ready func(runDir string) bool, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--store", store)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	runDir := filepath.Join(store, "latest")
	deadline := time.Now().Add(60 * time.Second)
	for !ready(runDir) {
		if time.Now().After(deadline) {
			t.Fatal("the phase to interrupt never came")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("after SIGINT: %v, want exit 130; stderr:\n%s", err, stderr.String())
		}
		t.Logf("exit 130 %s after SIGINT", time.Since(sent).Round(time.Millisecond))
	case <-time.After(2 * time.Second):
		t.Fatal("no exit within 2 s of SIGINT")
	}
	assertNothingLeft(t, store)
	return runDir
}

// TestInterruptAtEveryPhase: Ctrl-C while the servers start (etcd elects
// its leader) and in the middle of the run exits 130 within 2 s. A run
// interrupted before any operation completed is no evidence of safety:
// analyze calls it unknown, and so does compare.
func TestInterruptAtEveryPhase(t *testing.T) {
	historyHas := func(s string) func(string) bool {
		return func(dir string) bool {
			data, _ := os.ReadFile(filepath.Join(dir, reports.HistoryFile))
			return strings.Contains(string(data), s)
		}
	}
	t.Run("start-up", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		serversStarting := func(dir string) bool {
			_, err := os.Stat(filepath.Join(dir, reports.NodeLogsDir, "etcd-0", "etcd-0.log"))
			return err == nil
		}
		dir := interrupt(t, store, serversStarting, "run", "--impl", "etcd", "--duration", "5s")
		r := locktestIn(t, store, "analyze", dir)
		if r.code != 2 {
			t.Fatalf("analyze of a run that never started: exit %d, want 2 (unknown)", r.code)
		}
		if strings.Count(r.stdout, "no client operation completed") != 1 {
			t.Fatalf("analyze does not say, once, why the verdict is unknown:\n%s", r.stdout)
		}
		out := filepath.Join(t.TempDir(), "compare")
		c := locktestIn(t, store, "compare", "--out", out, store)
		if c.code != 0 || !strings.Contains(c.stdout, "❔ **unknown**") || strings.Contains(c.stdout, "✅") {
			t.Fatalf("compare shows the empty run as other than unknown (exit %d):\n%s", c.code, c.stdout)
		}
	})
	t.Run("mid-run", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		interrupt(t, store, historyHas(`"type":"ok"`), "run", "--impl", "redis-single", "--duration", "60s")
	})
}

// TestBadStoreAndNames: a store that cannot be written, a scenario name
// that is not one directory name, limits beyond what runs, and a history
// that cannot be read are the user's to fix: one line, exit 254, nothing
// written outside the store.
func TestBadStoreAndNames(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unwritable := filepath.Join(tmp, "ro")
	if err := os.Mkdir(unwritable, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		unwritable = "/sys" // root writes anywhere, but sysfs takes no new directory
	}
	store := filepath.Join(tmp, "deep", "store")
	// A store whose latest is a directory, as --scenario latest made it.
	latestDir := filepath.Join(tmp, "latest-dir")
	if err := os.MkdirAll(filepath.Join(latestDir, "latest"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := []string{"run", "--impl", "redis-single", "--duration", "1s"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"scenario is the latest link", []string{"--store", store, "--scenario", "latest"}, `--scenario: name "latest": the store uses it`},
		{"scenario is a latest temporary", []string{"--store", store, "--scenario", "latest.tmp1"}, `--scenario: name "latest.tmp1": the store uses it`},
		{"scenario is the suites directory", []string{"--store", store, "--scenario", "suites"}, `--scenario: name "suites": the store uses it`},
		{"scenario is the parent", []string{"--store", store, "--scenario", ".."}, `--scenario: name ".."`},
		{"scenario is the root", []string{"--store", store, "--scenario", "/"}, `--scenario: name "/"`},
		{"latest is a directory", []string{"--store", latestDir}, "latest is not a link"},
		{"clock rate infinite", []string{"--store", store, "--clock-rate", "+Inf"}, `invalid value "+Inf" for --clock-rate: not a finite number`},
		{"clock rate NaN", []string{"--store", store, "--clock-rate", "NaN"}, `invalid value "NaN" for --clock-rate: not a finite number`},
		{"fault twice", []string{"--store", store, "--fault", "pause-holder,pause-holder"}, "--fault: pause-holder is given twice"},
		{"none beside a fault", []string{"--store", store, "--fault", "none,pause-holder"}, "--fault: none cannot be combined with other faults"},
		{"store empty", []string{"--store", ""}, `--store "": give a directory`},
		{"store is a file", []string{"--store", file}, "not a directory"},
		{"store under a file", []string{"--store", filepath.Join(file, "store")}, "not a directory"},
		{"store unwritable", []string{"--store", filepath.Join(unwritable, "store")}, "give a directory locktest can write to"},
		{"scenario escapes", []string{"--store", store, "--scenario", "../../x"}, `--scenario: name "../../x"`},
		{"scenario nests", []string{"--store", store, "--scenario", "a/b/c"}, `--scenario: name "a/b/c"`},
		{"too many keys", []string{"--store", store, "--keys", "1000000"}, "--keys 1000000: must be between 1 and 1000"},
		{"too many clients", []string{"--store", store, "--clients", "65"}, "--clients 65: must be between 1 and 64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// In an empty working directory, which a run must not write
			// into either (--store "").
			wd := t.TempDir()
			cmd := exec.Command(binary, append(run, tc.args...)...)
			cmd.Dir = wd
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 254 {
				t.Fatalf("%v, want exit 254:\n%s", err, out)
			}
			if strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("want one line saying %q, got:\n%s", tc.want, out)
			}
			if left, _ := os.ReadDir(wd); len(left) > 0 {
				t.Fatalf("bad input wrote %s into the working directory", left[0].Name())
			}
		})
	}
	for _, p := range []string{filepath.Join(tmp, "deep"), filepath.Join(tmp, "x")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("bad input wrote %s", p)
		}
	}
	if left, _ := os.ReadDir(latestDir); len(left) != 1 {
		t.Fatalf("a store whose latest is a directory got %d entries, want latest alone", len(left))
	}

	good := locktest(t, "run", "--impl", "redis-single", "--duration", "1s")
	if good.code != 0 {
		t.Fatalf("a plain run: exit %d", good.code)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(good.store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(runDir, reports.HistoryFile)
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(runDir, scenario.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	mid := len(lines) / 2
	// damaged is a copy of the good run (its config.json and history) as
	// edit leaves them.
	damaged := func(edit func(config []byte, lines []string) ([]byte, []string)) string {
		dir := t.TempDir()
		c, l := edit(slices.Clone(config), slices.Clone(lines))
		if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), c, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), []byte(strings.Join(l, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	record := func(lines []string, edit func(r *history.Record)) {
		var r history.Record
		if err := json.Unmarshal([]byte(lines[mid]), &r); err != nil {
			t.Fatal(err)
		}
		edit(&r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines[mid] = string(b)
	}
	setting := func(name string, v any) func([]byte, []string) ([]byte, []string) {
		return func(config []byte, lines []string) ([]byte, []string) {
			var m map[string]any
			if err := json.Unmarshal(config, &m); err != nil {
				t.Fatal(err)
			}
			m[name] = v
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			return b, lines
		}
	}
	noHistory := t.TempDir()
	if err := os.Link(filepath.Join(runDir, "config.json"), filepath.Join(noHistory, "config.json")); err != nil {
		t.Fatal(err)
	}
	readOnly := damaged(func(c []byte, l []string) ([]byte, []string) { return c, l })
	if os.Geteuid() == 0 {
		// Root writes through permissions, not into an immutable directory.
		if out, err := exec.Command("chattr", "+i", readOnly).CombinedOutput(); err != nil {
			t.Logf("chattr +i (the file system may not take it): %v: %s", err, out)
			readOnly = ""
		} else {
			t.Cleanup(func() { exec.Command("chattr", "-i", readOnly).Run() })
		}
	} else if err := os.Chmod(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"line cut in the middle", damaged(func(c []byte, l []string) ([]byte, []string) {
			l[mid] = `{"type":"ok","ti`
			return c, l
		}), "the history is damaged"},
		{"no history", noHistory, "has no history.jsonl"},
		{"error string too long", damaged(func(c []byte, l []string) ([]byte, []string) {
			record(l, func(r *history.Record) { r.Error = strings.Repeat("x", history.MaxString+1) })
			return c, l
		}), fmt.Sprintf("history line %d: error is", mid+1)},
		{"time far past the run", damaged(func(c []byte, l []string) ([]byte, []string) {
			record(l, func(r *history.Record) { r.Time += int64(480 * time.Second) })
			return c, l
		}), fmt.Sprintf("history line %d: time", mid+1)},
		{"process beyond the clients", damaged(func(c []byte, l []string) ([]byte, []string) {
			record(l, func(r *history.Record) { r.Process = 40 })
			return c, l
		}), fmt.Sprintf("history line %d: process 40, but the run had 5 clients", mid+1)},
		{"newlines replaced", damaged(func(c []byte, l []string) ([]byte, []string) {
			return c, []string{strings.Join(l, " ")}
		}), "history line 1 holds a whole record and more"},
		{"config empty", damaged(func(_ []byte, l []string) ([]byte, []string) { return []byte("{}"), l }), "config.json: field impl"},
		{"config scenario blank", damaged(setting("scenario", "")), `config.json: field scenario: scenario: name ""`},
		{"config clients negative", damaged(setting("clients", -3)), "config.json: field clients: clients -3: must be between 1 and 64"},
		{"run dir read-only", readOnly, "give --no-report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dir == "" {
				t.Skip("no directory here can be made read-only for root")
			}
			r := locktestIn(t, "", "analyze", tc.dir)
			out := strings.TrimSpace(r.stdout + r.stderr)
			if r.code != 254 || strings.Contains(out, "\n") || !strings.Contains(out, tc.want) {
				t.Fatalf("analyze %s: exit %d, want 254 and one line saying %q:\n%s", tc.dir, r.code, tc.want, out)
			}
		})
	}
	if readOnly == "" {
		return
	}
	if r := locktestIn(t, "", "analyze", "--no-report", readOnly); r.code != 0 {
		t.Fatalf("analyze --no-report of the read-only copy: exit %d, want 0 (valid)", r.code)
	}
}

// TestServerDataOnlyWhenAsked: a valid etcd run keeps its servers' logs
// but not their data (three preallocated 64 MB write-ahead logs), unless
// --keep-data.
func TestServerDataOnlyWhenAsked(t *testing.T) {
	for _, keep := range []bool{false, true} {
		args := []string{"run", "--impl", "etcd", "--duration", "2s"}
		if keep {
			args = append(args, "--keep-data")
		}
		r := locktest(t, args...)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0", r.code)
		}
		node := filepath.Join(r.store, "latest", reports.NodeLogsDir, "etcd-0")
		if _, err := os.Stat(filepath.Join(node, "etcd-0.log")); err != nil {
			t.Fatalf("the server log is gone: %v", err)
		}
		_, err := os.Stat(filepath.Join(node, "data"))
		if kept := err == nil; kept != keep {
			t.Fatalf("--keep-data=%v: data directory kept: %v", keep, kept)
		}
		var size int64
		_ = filepath.Walk(filepath.Join(r.store, "latest")+"/", func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				size += fi.Size()
			}
			return nil
		})
		t.Logf("--keep-data=%v: run directory holds %d KB", keep, size>>10)
		if !keep && size > 5<<20 {
			t.Fatalf("the run directory holds %d bytes without --keep-data", size)
		}
	}
}
