package tests

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// TestDatabaseLocks runs the connection-bound database locks people ship
// against their real servers (suites/libraries.yaml has the rates over
// seeds 1–5):
//
//   - postgres-advisory-pgbouncer loses mutual exclusion with no fault at
//     all: in transaction pooling mode PgBouncer runs each statement on
//     whichever server session is free, so the advisory lock is taken on one
//     backend and the unlock often lands on another (it answers false, and
//     the release fails), while every client lent the holding backend is
//     granted the lock again.
//   - mariadb-getlock is safe with no fault, and loses updates when the
//     server restarts under a holder inside its critical section: the
//     restart ends the holder's session and its lock with it, another client
//     takes the lock, and the holder, told nothing, writes on.
func TestDatabaseLocks(t *testing.T) {
	// An unlock served by another backend answers false: the release
	// fails although the client held the lock.
	releaseFailed := func(t *testing.T, h runHistory, _ reports.Results) {
		n := 0
		for _, op := range h.ops {
			if op.F == "release" && op.Outcome == history.Fail {
				n++
			}
		}
		if n == 0 {
			t.Error("no release failed: every unlock found its lock, so no backend was mixed up")
		}
	}
	runScenarios(t, []runCase{
		{row: "database", impl: "postgres-advisory-pgbouncer", fault: "none", code: 1,
			mutex: checker.Invalid, data: checker.Invalid,
			check: releaseFailed},
		{row: "database", impl: "mariadb-getlock", fault: "none", code: 0, mutex: checker.Valid, data: checker.Valid},
		// Each strike right after a grant, holds (3 s, as the suite's
		// mariadb-getlock-kill-node-at-grant) longer than the server is down
		// even on a loaded machine: the holder is still inside when the
		// others get in again.
		{row: "database", impl: "mariadb-getlock", fault: "kill-node", code: 1, mutex: checker.Invalid,
			data: checker.Invalid, args: []string{"--fault-moment", "grant", "--hold-min", "3s", "--hold-max", "3s",
				"--fault-duration", "1s"}},
	}, "6s")
}

// TestDatabaseLocksListed: locktest list impls names both, and locktest
// version the servers they run on.
func TestDatabaseLocksListed(t *testing.T) {
	r := locktest(t, "list", "impls")
	for _, want := range []string{"postgres-advisory-pgbouncer ", "mariadb-getlock "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("locktest list impls lacks %q", want)
		}
	}
	r = locktest(t, "version")
	for _, want := range []string{"server    pgbouncer ", "server    mariadbd "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("locktest version lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestInterruptedDatabaseLeavesNoFiles interrupts (SIGINT) and kills
// (SIGKILL) the coordinator of database runs while a worker is paused:
// besides their processes, the servers must leave no shared memory
// (/dev/shm, System V) and no socket file behind. The servers cannot
// clean up after themselves: they are killed too. The postgres runs are
// also cut short while initdb's backends have their dynamic shared memory
// mapped (initdb has no option to keep it out of /dev/shm; two /dev/shm
// segments and a System V one were left every time), and while the
// server starts, before the coordinator can release its interlock (its
// System V segment was left every time).
func TestInterruptedDatabaseLeavesNoFiles(t *testing.T) {
	for _, tc := range []struct{ impl, when string }{
		{"postgres-advisory", "initdb"},
		{"postgres-advisory", "server-start"},
		{"postgres-advisory", "fault"},
		{"mariadb-getlock", "fault"},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
			t.Run(tc.impl+"/"+tc.when+"/"+sig.String(), func(t *testing.T) {
				store := filepath.Join(t.TempDir(), "store")
				cmd := exec.Command(binary, "run", "--impl", tc.impl, "--fault", "pause-holder",
					"--fault-interval", "500ms", "--fault-duration", "20s", "--duration", "60s", "--store", store)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer cmd.Process.Kill()
				var pids map[string]bool
				var shm []string
				switch tc.when {
				case "initdb":
					pids, shm = waitForInitdbSegment(t, store)
				case "server-start":
					pids, shm = waitForStartingServer(t, store)
				default:
					waitForFault(t, filepath.Join(store, "latest", "history.jsonl"))
					pids = processesOf(t, store)
					shm = sharedMemoryOf(t, pids)
				}
				if len(pids) == 0 {
					t.Fatal("found no process of the run: the leftover check would prove nothing")
				}
				sysv := sysvSegmentsOf(t, pids)
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				assertNothingLeft(t, store)
				for _, f := range shm {
					if _, err := os.Stat(f); err == nil {
						t.Errorf("%s outlived the run", f)
					}
				}
				for _, left := range sysvSegmentsOf(t, nil) {
					if slices.Contains(sysv, left) {
						t.Errorf("System V shared memory %s outlived the run", left)
					}
				}
				_ = filepath.WalkDir(store, func(path string, d fs.DirEntry, err error) error {
					if err == nil && d.Type()&fs.ModeSocket != 0 {
						t.Errorf("socket file %s outlived the run", path)
					}
					return nil
				})
			})
		}
	}
}

// processesOf lists the pids of the processes of the store's runs.
func processesOf(t *testing.T, store string) map[string]bool {
	t.Helper()
	pids := map[string]bool{}
	for _, p := range ourProcesses(t, store) {
		pids[strings.SplitN(p, ":", 2)[0]] = true
	}
	return pids
}

// waitForInitdbSegment waits until a process of the store's run (one of
// initdb's backends) maps a PostgreSQL dynamic shared memory segment, and
// returns the run's processes and the /dev/shm files they map then.
func waitForInitdbSegment(t *testing.T, store string) (map[string]bool, []string) {
	t.Helper()
	return waitForProcesses(t, store, "initdb to map dynamic shared memory", func(_ map[string]bool, shm []string) bool {
		return slices.ContainsFunc(shm, func(f string) bool { return strings.Contains(f, "/PostgreSQL.") })
	})
}

// waitForStartingServer waits until the postmaster of the store's run
// (not one of initdb's backends) has attached its System V interlock
// segment, well before it serves and the coordinator can see to that
// segment.
func waitForStartingServer(t *testing.T, store string) (map[string]bool, []string) {
	t.Helper()
	return waitForProcesses(t, store, "postgres to start", func(pids map[string]bool, _ []string) bool {
		for pid := range pids {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
			maps, _ := os.ReadFile(filepath.Join("/proc", pid, "maps"))
			if strings.Contains(string(cmdline), "listen_addresses=") && strings.Contains(string(maps), "/SYSV") {
				return true
			}
		}
		return false
	})
}

// waitForProcesses polls the processes of the store's run and the
// /dev/shm files they map until ready says so (for up to 30 s), and
// returns them.
func waitForProcesses(t *testing.T, store, what string, ready func(pids map[string]bool, shm []string) bool) (map[string]bool, []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := processesOf(t, store)
		shm := sharedMemoryOf(t, pids)
		if ready(pids, shm) {
			return pids, shm
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sharedMemoryOf lists the files in /dev/shm that the processes map.
func sharedMemoryOf(t *testing.T, pids map[string]bool) []string {
	t.Helper()
	var files []string
	for pid := range pids {
		maps, _ := os.ReadFile(filepath.Join("/proc", pid, "maps"))
		for _, line := range strings.Split(string(maps), "\n") {
			if i := strings.Index(line, "/dev/shm/"); i >= 0 && !slices.Contains(files, line[i:]) {
				files = append(files, line[i:])
			}
		}
	}
	return files
}

// sysvSegmentsOf lists the System V shared memory segments (as "id
// made by pid") that the processes made; every one for nil pids.
func sysvSegmentsOf(t *testing.T, pids map[string]bool) []string {
	t.Helper()
	table, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, line := range strings.Split(string(table), "\n")[1:] {
		// key shmid perms size cpid ...
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if _, err := strconv.Atoi(f[4]); err == nil && (pids == nil || pids[f[4]]) {
			segs = append(segs, f[1]+" made by "+f[4])
		}
	}
	return segs
}
