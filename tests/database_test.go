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
// clean up after themselves: they are killed too.
func TestInterruptedDatabaseLeavesNoFiles(t *testing.T) {
	for _, impl := range []string{"postgres-advisory", "mariadb-getlock"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
			t.Run(impl+"/"+sig.String(), func(t *testing.T) {
				store := filepath.Join(t.TempDir(), "store")
				cmd := exec.Command(binary, "run", "--impl", impl, "--fault", "pause-holder",
					"--fault-interval", "500ms", "--fault-duration", "20s", "--duration", "60s", "--store", store)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer cmd.Process.Kill()
				waitForFault(t, filepath.Join(store, "latest", "history.jsonl"))
				pids := map[string]bool{}
				for _, p := range ourProcesses(t, store) {
					pids[strings.SplitN(p, ":", 2)[0]] = true
				}
				if len(pids) == 0 {
					t.Fatal("found no process of the run: the leftover check would prove nothing")
				}
				shm, sysv := sharedMemoryOf(t, pids), sysvSegmentsOf(t, pids)
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
