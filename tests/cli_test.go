package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

// TestBadInput: each mistake gives one clear line, exit 254, and nothing
// started or written (or, for what only running servers tell, nothing
// left).
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown impl", []string{"run", "--impl", "no-such-lock"}, nil, "unknown impl"},
		{"zero clients", []string{"run", "--impl", "redis-single", "--clients", "0"}, nil, "--clients 0"},
		{"bad duration", []string{"run", "--impl", "redis-single", "--duration", "fifteen"}, nil, "not a duration"},
		{"unknown fault", []string{"run", "--impl", "redis-single", "--fault", "gremlins"}, nil, "unknown fault"},
		{"unknown workload", []string{"run", "--impl", "redis-single", "--workload", "dance"}, nil, "unknown workload"},
		{"redis-server missing", []string{"run", "--impl", "redis-single"}, []string{"PATH=" + t.TempDir()}, "apt-get install redis-server"},
		{"suite of a billion seeds", []string{"suite", "run", "../suites/quick.yaml", "--seeds", "1000000000", "--run", "redis-single-none"}, nil,
			"make more than 10000 runs"},
		{"link from a client there is not", []string{"run", "--impl", "redis-single", "--fault", "partition", "--fault-target", "link:c9:redis-0", "--duration", "5s"}, nil,
			"there are only 5 clients"},
		{"link between two clients", []string{"run", "--impl", "redis-single", "--fault", "partition", "--fault-target", "link:c0:c1", "--duration", "5s"}, nil,
			"not to client c1"},
		{"link with one end", []string{"run", "--impl", "redis-single", "--fault", "latency", "--fault-target", "link:c0", "--duration", "5s"}, nil,
			"unknown target"},
		// Which servers there are is known once they run: refused then,
		// with every server stopped and the store it made removed.
		{"link to a server there is not", []string{"run", "--impl", "redis-single", "--fault", "partition", "--fault-target", "link:c0:nosuch", "--duration", "5s"}, nil,
			"no such link"},
		{"no command", nil, nil, "usage"},
		{"unknown command", []string{"frobnicate"}, nil, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			args := tc.args
			switch {
			case len(args) > 0 && args[0] == "run":
				args = append(args, "--store", store)
			case len(args) > 0 && args[0] == "suite":
				args = append(args, "--out", store)
			}
			// A refusal is immediate; what expands before refusing (a
			// suite's runs) must not get minutes to fill memory.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, args...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 254 {
				t.Fatalf("exit %v, want 254; output:\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output does not say %q:\n%s", tc.want, out)
			}
			if tc.args != nil && len(lines) != 1 {
				t.Fatalf("want one line, got %d:\n%s", len(lines), out)
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Fatalf("bad input left a store behind: %v", err)
			}
			assertNothingLeft(t, store)
		})
	}
}

// TestInterruptedRunLeavesNothing sends the coordinator SIGINT, and then
// SIGKILL, in the middle of a run with a paused client: every server and
// worker must go, and the history written so far must be analyzable, as
// a run cut short: unknown.
func TestInterruptedRunLeavesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			cmd := exec.Command(binary, "run", "--impl", "redis-single", "--fault", "pause-holder",
				"--fault-interval", "500ms", "--fault-duration", "20s", "--duration", "60s", "--store", store)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			histPath := filepath.Join(store, "latest", "history.jsonl")
			waitForFault(t, histPath)
			if len(ourProcesses(t, store)) == 0 {
				t.Fatal("found no process of the run: the leftover check would prove nothing")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			ee, _ := err.(*exec.ExitError)
			if sig == syscall.SIGINT && (ee == nil || ee.ExitCode() != 130) {
				t.Fatalf("after SIGINT: %v, want exit 130", err)
			}
			assertNothingLeft(t, store)
			recs, err := history.ReadFile(histPath)
			if err != nil && err != history.ErrTruncated {
				t.Fatalf("history unreadable after %s: %v", sig, err)
			}
			if len(recs) == 0 {
				t.Fatal("empty history")
			}
			// The run never reached its end: what the history holds cannot
			// say valid, and the summary says how far it got.
			r := locktestIn(t, store, "analyze", filepath.Join(store, "latest"))
			if r.code != 2 || !strings.Contains(r.stdout, "CUT SHORT: run asked 60.00 s, cut short at ") {
				t.Fatalf("analyze after %s: exit %d, want 2 (unknown) and a health line saying the run was cut short", sig, r.code)
			}
		})
	}
}
