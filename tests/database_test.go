package tests

import (
	"strings"
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
