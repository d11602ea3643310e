package tests

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/reports"
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
	run := []string{"run", "--impl", "redis-single", "--duration", "1s"}
	cases := []struct {
		name string
		args []string
		want string
	}{
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
			out, err := exec.Command(binary, append(run, tc.args...)...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 254 {
				t.Fatalf("%v, want exit 254:\n%s", err, out)
			}
			if strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("want one line saying %q, got:\n%s", tc.want, out)
			}
		})
	}
	for _, p := range []string{filepath.Join(tmp, "deep"), filepath.Join(tmp, "x")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("bad input wrote %s", p)
		}
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
	lines := strings.Split(string(data), "\n")
	lines[len(lines)/2] = `{"type":"ok","ti`
	if err := os.WriteFile(hist, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	noHistory := t.TempDir()
	if err := os.Link(filepath.Join(runDir, "config.json"), filepath.Join(noHistory, "config.json")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{runDir, "the history is damaged"},
		{noHistory, "has no history.jsonl"},
	} {
		r := locktestIn(t, "", "analyze", tc.dir)
		out := strings.TrimSpace(r.stdout + r.stderr)
		if r.code != 254 || strings.Contains(out, "\n") || !strings.Contains(out, tc.want) {
			t.Fatalf("analyze %s: exit %d, want 254 and one line saying %q:\n%s", tc.dir, r.code, tc.want, out)
		}
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
