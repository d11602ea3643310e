package tests

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// longHolds makes every critical section outlast the time the other
// clients take to find the promoted replica (about a second): a grant lost
// in the failover then still matters when the promoted replica hands the
// lock out again. The lease still covers the whole critical section.
var longHolds = []string{"--ttl", "2s", "--hold-min", "1.5s", "--hold-max", "1.8s", "--duration", "15s", "--fault-interval", "3s"}

// splitArgs: the bare-majority holder keeps the lock a few hundred ms,
// well within its lease, while another client can take a majority.
var splitArgs = []string{"--hold-min", "300ms", "--hold-max", "500ms", "--duration", "12s", "--fault-interval", "3s"}

// splitUnsafeArgs gives an expected loss more strikes than 12 s hold (on
// a loaded machine a strike can miss the grant it aims at: seed 1 of
// redsync's row 8 did once) and ends the run once both checks found it.
var splitUnsafeArgs = append(slices.Clone(splitArgs), "--duration", "24s", "--stop-on-violation", "mutex,resource")

// pauseAcquireArgs: after a refused try the client sleeps at least 100 ms,
// so an acquire that returns sooner after its pause ended was granted by
// the very try it was paused in.
var pauseAcquireArgs = []string{"--retry-min", "100ms"}

const (
	pausedTryWindow = 100 * time.Millisecond
	defaultTTL      = time.Second // locktest run's --ttl default
)

// TestRedisFamily reproduces the docs/anomalies.md rows of the Redis lock family
// on real servers, one scenario per row, and checks the evidence that
// makes each row what it is, not only the verdict.
func TestRedisFamily(t *testing.T) {
	cases := []runCase{
		{row: "row4", impl: "redis-del", fault: "pause-holder", code: 1, mutex: checker.Invalid, data: checker.Invalid,
			check: func(t *testing.T, h runHistory, _ reports.Results) {
				// The late holder's DEL removed a live holder's key, so two
				// clients that were never paused held the lock at once.
				if n := len(h.freshOverlaps()); n == 0 {
					t.Fatal("no two unpaused clients ever held the lock at once: the DEL did no harm")
				}
			}},
		{row: "row4-control", impl: "redis-single", fault: "pause-holder", code: 1, mutex: checker.Invalid, data: checker.Invalid,
			check: func(t *testing.T, h runHistory, _ reports.Results) {
				// Compare-and-delete: only the paused holder is ever stale.
				if o := h.freshOverlaps(); len(o) > 0 {
					t.Fatalf("compare-and-delete let unpaused clients overlap: %v", o)
				}
			}},
		// A cache that evicts drops a held lock's key under memory
		// pressure; one that refuses writes when full does not.
		{row: "row24", impl: "redis-single", fault: "memory-pressure", args: []string{"--eviction", "allkeys-lru"},
			code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "row24-control", impl: "redis-single", fault: "memory-pressure", args: []string{"--eviction", "noeviction"},
			code: 0, mutex: checker.Valid, data: checker.Valid},
		// memcached always evicts; a hold must outlast the fillers that
		// push the lock's item to the end of its size class's LRU.
		{row: "row24-memcached", impl: "memcached", fault: "memory-pressure",
			args: []string{"--ttl", "3s", "--hold-min", "500ms", "--hold-max", "1s"},
			code: 1, mutex: checker.Invalid, data: checker.Invalid},
		// Redis Cluster: the key's primary, cut off from the other nodes
		// but not from its clients, grants once more; the promoted replica
		// never saw it. WAIT 1 gives back every grant made across the cut.
		{row: "row26", impl: "redis-cluster", fault: "cluster-failover", args: clusterFailoverArgs("--stop-on-violation", "resource"),
			code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "row26-wait", impl: "redis-cluster-wait", fault: "cluster-failover", args: clusterFailoverArgs(),
			code: 0, data: checker.Valid},
		// Killed or frozen right after a grant, the key's primary has
		// already passed the grant to its replica: nothing is lost.
		{row: "row26-kill", impl: "redis-cluster", fault: "cluster-failover-kill", args: clusterFailoverArgs("--duration", "20s"),
			code: 0, mutex: checker.Valid, data: checker.Valid, check: wantFault("cluster-failover-kill")},
		{row: "row26-pause", impl: "redis-cluster", fault: "cluster-failover-pause", args: clusterFailoverArgs("--duration", "20s"),
			code: 0, mutex: checker.Valid, data: checker.Valid, check: wantFault("cluster-failover-pause")},
		// redsync's Extend renews only where the key still is: quick
		// restarts one after another leave it on a minority while the
		// holder's renewed lease runs. Setting it again on extend does not.
		// A failed renewal abandons the write, so the data stays safe.
		{row: "row28", impl: "redsync", fault: "rolling-restart", args: rollingRestartArgs("--stop-on-violation", "mutex"),
			code: 0, mutex: checker.Invalid, data: checker.Valid,
			check: func(t *testing.T, _ runHistory, res reports.Results) {
				if l := res.Checks.Lease; l == nil || l.Class != checker.InsideLease {
					t.Fatalf("lease finding %+v: want the overlap inside the holder's renewed lease", l)
				}
			}},
		{row: "row28-setnx", impl: "redsync-setnx-extend", fault: "rolling-restart", args: rollingRestartArgs(),
			code: 0, mutex: checker.Valid, data: checker.Valid,
			check: func(t *testing.T, _ runHistory, res reports.Results) {
				if r := res.Metrics.Renewals; r.OK == 0 {
					t.Fatalf("renewals %+v: want renewals granted across the restarts", r)
				}
			}},
		// Source S4: the data's version check refuses a late holder's
		// write, with the lock and without one: wasted work, no loss.
		{row: "row25", impl: "redis-version-check", fault: "pause-holder", code: 0, mutex: checker.Invalid, data: checker.Valid},
		{row: "row25-nolock", impl: "version-check", fault: "pause-holder", code: 0, mutex: checker.Invalid, data: checker.Valid,
			check: func(t *testing.T, _ runHistory, res reports.Results) {
				if res.Checks.Stats.Rejected == 0 {
					t.Fatal("with no lock every client wrote at once, and the version check refused none")
				}
			}},
		{row: "row5", impl: "redis-getset", fault: "client-clock-skew", code: 1, mutex: checker.Invalid, data: checker.Invalid},
		// Expiry judged by the server: a client's clock does not matter.
		{row: "row5-control", impl: "redis-single", fault: "client-clock-skew", code: 0, mutex: checker.Valid, data: checker.Valid},
		{row: "row6", impl: "redis-replicated", fault: "failover", args: longHolds, code: 1, mutex: checker.Invalid, data: checker.Invalid,
			check: wantFault("failover")},
		{row: "row19", impl: "redis-fenced-counter", fault: "failover", args: longHolds,
			code: 1, data: checker.Invalid,
			check: func(t *testing.T, h runHistory, _ reports.Results) {
				if len(h.reusedTokens()) == 0 {
					t.Fatal("lost updates, but no fencing token was handed out twice")
				}
			}},
		{row: "row19-control", impl: "redis-fenced-counter", fault: "pause-holder", code: 0, mutex: checker.Invalid, data: checker.Valid,
			check: func(t *testing.T, h runHistory, res reports.Results) {
				if res.Checks.Stats.Rejected == 0 || len(h.reusedTokens()) > 0 {
					t.Fatalf("want stale writes rejected and no token reused: %+v, reused %v", res.Checks.Stats, h.reusedTokens())
				}
			}},
		{row: "row10", impl: "redlock-noelapsed", fault: "pause-acquire", args: pauseAcquireArgs, code: 1,
			mutex: checker.Invalid, data: checker.Invalid,
			check: func(t *testing.T, h runHistory, _ reports.Results) {
				if len(h.grantedByPausedTry()) == 0 {
					t.Fatal("no acquire returned ok from the try it was paused in")
				}
			}},
		{row: "row10", impl: "redlock", fault: "pause-acquire", args: pauseAcquireArgs, code: 0,
			mutex: checker.Valid, data: checker.Valid, check: noGrantByPausedTry},
		{row: "row10", impl: "redsync", fault: "pause-acquire", args: pauseAcquireArgs, code: 0,
			mutex: checker.Valid, data: checker.Valid, check: noGrantByPausedTry},
		{row: "row8", impl: "redlock", fault: "redlock-clock-jump", args: splitUnsafeArgs, code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "row8", impl: "redsync", fault: "redlock-clock-jump", args: splitUnsafeArgs, code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "row9", impl: "redlock", fault: "redlock-restart", args: append([]string{"--fault-duration", "10ms"}, splitUnsafeArgs...),
			code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "row9-aof", impl: "redlock", fault: "redlock-restart", args: append([]string{"--fault-duration", "10ms", "--persist"}, splitArgs...),
			code: 0, mutex: checker.Valid, data: checker.Valid},
		{row: "row9-delayed", impl: "redlock", fault: "redlock-restart", args: append([]string{"--fault-duration", "2s"}, splitArgs...),
			code: 0, mutex: checker.Valid, data: checker.Valid},
		{row: "row11", impl: "redlock", fault: "pause-holder", code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "row11", impl: "redsync", fault: "pause-holder", code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "row12", impl: "redis-watchdog", fault: "pause-holder", code: 1, mutex: checker.Invalid, data: checker.Invalid},
		// The watchdog's point: critical sections longer than the TTL are
		// safe while the client runs; without it they are not.
		{row: "row12-renewal", impl: "redis-watchdog", fault: "none", args: []string{"--hold-min", "1.2s", "--hold-max", "1.5s"},
			code: 0, mutex: checker.Valid, data: checker.Valid},
		{row: "row12-renewal-control", impl: "redis-single", fault: "none", args: []string{"--hold-min", "1.2s", "--hold-max", "1.5s"},
			code: 1, data: checker.Invalid},
		{row: "row18", impl: "redis-lockdelay", fault: "pause-holder", args: []string{"--fault-duration", "1.5s"},
			code: 0, mutex: checker.Valid, data: checker.Valid,
			check: func(t *testing.T, _ runHistory, res reports.Results) {
				// The pause outlived the lease: the late release is refused.
				if res.Metrics.Releases.Fail == 0 {
					t.Fatal("no release was refused: the pause did not outlive the lease")
				}
			}},
		{row: "row18", impl: "redis-lockdelay", fault: "pause-holder", args: []string{"--fault-duration", "3s"},
			code: 1, mutex: checker.Invalid, data: checker.Invalid},
		{row: "seed-001", impl: "redis-reentrant", fault: "pause-holder", code: 1, mutex: checker.Invalid, data: checker.Invalid,
			check: func(t *testing.T, _ runHistory, res reports.Results) {
				// The seed's unlock notices the lease ran out.
				if res.Metrics.Releases.Fail == 0 {
					t.Fatal("the late holder's unlock did not report the expired lock")
				}
			}},
		{row: "seed-003", impl: "redis-getset", fault: "pause-holder", code: 1, mutex: checker.Invalid, data: checker.Invalid},
	}
	runScenarios(t, cases, "10s")
}

// TestRedisFamilyNoFault is row 20 for every design of the family: without
// faults each is safe, and each reports its store commands.
func TestRedisFamilyNoFault(t *testing.T) {
	for _, impl := range []string{"redis-del", "redis-getset", "redis-reentrant", "redis-watchdog", "redis-lockdelay",
		"redlock", "redlock-noelapsed", "redsync", "redis-replicated", "redis-replicated-wait", "redis-fenced-counter"} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel() // two at a time: each run is found by its own store
			r := locktest(t, "run", "--impl", impl, "--workload", "counter", "--fault", "none",
				"--clients", "5", "--duration", "4s", "--seed", "1")
			assertNothingLeft(t, r.store)
			if r.code != 0 {
				t.Fatalf("exit %d, want 0", r.code)
			}
			m := r.results(t).Metrics
			if m.Acquires.OK == 0 || m.CommandsPerAcquisition < 1 {
				t.Fatalf("no acquisitions or no commands counted: %+v", m)
			}
		})
	}
}

// TestRedisFamilyRefusals: faults that make no sense for a design are
// refused up front with one line and exit 254.
func TestRedisFamilyRefusals(t *testing.T) {
	for _, tc := range []struct{ impl, fault, want string }{
		{"redlock", "failover", "needs a design whose lock lives on a primary"},
		{"redis-single", "failover", "needs a design whose lock lives on a primary"},
		{"redis-replicated", "pause-acquire", "acquire-granted checkpoint"},
		{"redis-single", "redlock-clock-jump", "quorum of independent lock nodes"},
		{"redis-replicated", "redlock-restart", "quorum of independent lock nodes"},
	} {
		t.Run(tc.impl+"/"+tc.fault, func(t *testing.T) {
			r := locktest(t, "run", "--impl", tc.impl, "--fault", tc.fault)
			if r.code != 254 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 254 and one line saying %q", r.code, r.stderr, tc.want)
			}
			r.assertNothingLeft(t)
		})
	}
}

// runHistory is a run's history, read back for the row-specific checks.
type runHistory struct {
	ops    []history.Op
	faults []history.Fault
}

func readRunHistory(t *testing.T, r result) runHistory {
	t.Helper()
	recs, err := history.ReadFile(filepath.Join(r.store, "latest", reports.HistoryFile))
	if err != nil {
		t.Fatalf("read history: %v", err)
	}
	return runHistory{ops: history.Ops(recs), faults: history.Faults(recs)}
}

// faultOn reports whether a fault aimed at client c started in [from, to].
func (h runHistory) faultOn(c int, from, to int64) bool {
	for _, f := range h.faults {
		if f.Target == fmt.Sprintf("c%d", c) && f.Start >= from && f.Start <= to {
			return true
		}
	}
	return false
}

// freshOverlaps lists pairs of believed holds of one key by two clients
// at once where neither client was stopped by a fault during its hold:
// the harm a plain-DEL release does, which a paused holder alone cannot.
func (h runHistory) freshOverlaps() []string {
	var out []string
	for key, hs := range checker.Holds(h.ops) {
		for i, a := range hs {
			if h.faultOn(a.Process, a.From, a.To) {
				continue
			}
			for _, b := range hs[i+1:] {
				if b.Process != a.Process && b.From < a.To && a.From < b.To && !h.faultOn(b.Process, b.From, b.To) {
					out = append(out, fmt.Sprintf("%s: c%d and c%d", key, a.Process, b.Process))
				}
			}
		}
	}
	return out
}

// reusedTokens lists fencing tokens granted to more than one acquisition.
func (h runHistory) reusedTokens() []int64 {
	seen := map[int64]int{}
	var out []int64
	for _, op := range h.ops {
		if op.F == history.FAcquire && op.Outcome == history.OK && op.Token != 0 {
			if seen[op.Token]++; seen[op.Token] == 2 {
				out = append(out, op.Token)
			}
		}
	}
	return out
}

// grantedByPausedTry lists acquires that returned ok from the try their
// client was stopped in by pause-acquire (sooner after the pause than a
// retry could) for longer than the TTL: the client took a grant the pause
// had let expire. (A pause the run's end cut short is no such case.)
// The fault's stop is recorded after SIGCONT, so the resumed client may
// return a little before it: what counts is returning close to it.
func (h runHistory) grantedByPausedTry() []int {
	var out []int
	for _, op := range h.ops {
		if op.F != history.FAcquire || op.Outcome != history.OK {
			continue
		}
		for _, f := range h.faults {
			sinceResume := op.Return - f.Stop
			if f.Name == "pause-acquire" && f.Target == fmt.Sprintf("c%d", op.Process) && f.Stop-f.Start > int64(defaultTTL) &&
				op.Call < f.Start && op.Return > f.Start && -int64(pausedTryWindow) < sinceResume && sinceResume < int64(pausedTryWindow) {
				out = append(out, op.InvokeIndex)
			}
		}
	}
	return out
}

// noGrantByPausedTry: the elapsed-time check turned down every grant that
// a pause inside the acquire had made stale.
func noGrantByPausedTry(t *testing.T, h runHistory, _ reports.Results) {
	t.Helper()
	if g := h.grantedByPausedTry(); len(g) > 0 {
		t.Fatalf("acquires %v returned ok from the try they were paused in", g)
	}
	wantFault("pause-acquire")(t, h, reports.Results{})
}

// wantFault checks that the named fault happened and was healed.
func wantFault(name string) func(t *testing.T, h runHistory, _ reports.Results) {
	return func(t *testing.T, h runHistory, _ reports.Results) {
		t.Helper()
		for _, f := range h.faults {
			if f.Name == name {
				if !f.Healed {
					t.Fatalf("%s on %s was never healed", f.Name, f.Target)
				}
				return
			}
		}
		t.Fatalf("no %s fault in the history", name)
	}
}

// clusterFailoverArgs are row 26's settings (suites/full.yaml): holds that
// outlast the replica's promotion and the clients' next map reload.
// rollingRestartArgs: row 28's settings. Holds of 4-6 s renewed every
// TTL/3 span three quick restarts one TTL apart.
func rollingRestartArgs(more ...string) []string {
	return append([]string{"--workload", "counter-renew", "--clients", "3", "--duration", "20s", "--hold-min", "2s",
		"--hold-max", "3s", "--fault-interval", "1s", "--fault-duration", "10ms"}, more...)
}

func clusterFailoverArgs(more ...string) []string {
	return append([]string{"--duration", "40s", "--ttl", "6s", "--hold-min", "3500ms", "--hold-max", "4s",
		"--fault-interval", "3s", "--fault-duration", "3s"}, more...)
}
