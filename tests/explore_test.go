package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/explore"
)

// readExplore reads explore.json from an exploration directory.
func readExplore(t *testing.T, dir string) explore.Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, explore.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var rep explore.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestExploreFindsUnseenLock: explore, with no flags but the design, finds
// the lost update of a lock it knows nothing about (the unfenced Python
// client of the process protocol), shrinks it, and writes a capsule that
// replays as a suite. The search's seed is fixed: its second trial (a
// client paused just after its grant) loses updates when the pause lands
// right, and its fifth (a holder paused past the lease, beginning ~65 s
// in) loses them with holds past the lease too, so its control loses them
// as well and the same point runs again with holds inside the lease, past
// the budget if need be. The budget lets the fifth begin under load; a
// search goes on for its whole budget after a finding beyond the lease, so
// it is no longer.
func TestExploreFindsUnseenLock(t *testing.T) {
	out := filepath.Join(t.TempDir(), "explore")
	r := locktest(t, "explore", "--impl", "exec", "--exec-cmd", "python3 protocol/redislock.py", "--exec-servers", "redis-single",
		"--budget", "110s", "--shrink-budget", "45s", "--shrink-seeds", "2", "--out", out)
	if r.code != 1 || !strings.Contains(r.stdout, "FOUND") {
		t.Fatalf("want a violation (exit 1), got exit %d", r.code)
	}
	rep := readExplore(t, out)
	if rep.Found == nil || len(rep.Found.Failed) == 0 {
		t.Fatalf("explore.json has no finding with failing seeds: %+v", rep.Found)
	}
	// The reference client is a correct unfenced lease lock on one Redis
	// node: it loses to a lease that ran out, and, inside the lease, only
	// to its one server restarting empty (docs/anomalies.md row 9: killed,
	// or restarted as an upgrade does), alone or in a pair, never to a bug
	// of its own.
	restarts := func(fault string) bool { return fault == "kill-node" || fault == "rolling-restart" }
	switch f := rep.Found; {
	case f.Class == checker.BeyondLease:
	case f.Class == checker.InsideLease && (restarts(f.Knobs.Fault) || restarts(f.Knobs.Fault2)):
	default:
		t.Errorf("the correct unfenced lock was found %s under %s", f.Class, f.Knobs.Fault)
	}
	if _, err := os.Stat(filepath.Join(out, explore.ReportHTML)); err != nil {
		t.Fatal(err)
	}
	s := locktest(t, "suite", "run", filepath.Join(out, explore.CapsuleFile), "--out", filepath.Join(t.TempDir(), "replay"), "--parallel", "4")
	if s.code != 0 {
		t.Fatalf("the capsule did not replay: exit %d", s.code)
	}
	assertNothingLeft(t, out, binary)
}

// TestExploreNoFaultNeeded: a lock that lets every client in loses
// updates with no fault at all; explore says so ("no fault needed"), exit
// 1, at its first trial that loses updates with critical sections inside
// the lease, instead of blaming them and searching on, and its capsule
// replays the failure without a fault.
func TestExploreNoFaultNeeded(t *testing.T) {
	out := filepath.Join(t.TempDir(), "explore")
	r := locktest(t, "explore", "--impl", "exec", "--exec-cmd", "python3 protocol/zoo.py open", "--exec-servers", "redis-single",
		"--budget", "3m", "--shrink-budget", "0s", "--out", out)
	if r.code != 1 || !strings.Contains(r.stdout, "unsafe with no fault") {
		t.Fatalf("want exit 1 and 'unsafe with no fault', got exit %d:\n%s", r.code, r.stdout)
	}
	rep := readExplore(t, out)
	if rep.Found == nil || rep.Found.Class != checker.NoFaultNeeded {
		t.Fatalf("want a no-fault-needed finding: %+v", rep.Found)
	}
	// Only a trial whose critical sections outlived the lease may have lost
	// updates before it and the search gone on (its holds capped).
	for _, tr := range rep.Trials[:len(rep.Trials)-1] {
		if tr.Result == checker.Invalid && tr.Knobs.Hold*(1+tr.Knobs.HoldSpread) < 1 {
			t.Errorf("trial t%03d lost updates with critical sections inside the lease and the search went on", tr.N)
		}
	}
	if f := rep.Found.Config.Faults; len(f) != 1 || f[0] != "none" {
		t.Errorf("the capsule replays faults %v, want none", f)
	}
	s := locktest(t, "suite", "run", filepath.Join(out, explore.CapsuleFile), "--out", filepath.Join(t.TempDir(), "replay"), "--parallel", "4")
	if s.code != 0 {
		t.Fatalf("the capsule did not replay: exit %d", s.code)
	}
}

// TestExploreSafeReportsCoverage: on a fenced design whose resource fences
// reads too nothing is found, and the exit is 0 with coverage that shows
// the strikes landed at lock moments and took effect (the holder's lease
// did run out): the search looked where the unfenced lock breaks. (With
// writes fenced only, a pause just past the lease loses updates:
// docs/anomalies.md.)
func TestExploreSafeReportsCoverage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "explore")
	r := locktest(t, "explore", "--impl", "redis-single-fenced", "--fault", "pause-holder", "--fencing", "reads-writes",
		"--budget", "45s", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "no violation found under this coverage") {
		t.Fatalf("want exit 0 with coverage, got %d", r.code)
	}
	rep := readExplore(t, out)
	if rep.Found != nil || len(rep.Trials) < 2 || len(rep.Coverage) != 1 {
		t.Fatalf("want ≥ 2 trials, no finding, one fault covered: %+v", rep)
	}
	c := rep.Coverage[0]
	effective := 0
	for m, mc := range c.Moments {
		if m != "any" && mc.Strikes > 0 {
			effective += mc.Effective
		}
	}
	if c.Strikes == 0 || effective == 0 {
		t.Fatalf("no strike at a lock moment took effect: %+v", c)
	}
	if len(c.Fencing) != 0 {
		t.Fatalf("--fencing reads-writes was given, and the search drew fencings %v", c.Fencing)
	}
	assertNothingLeft(t, out, binary)
}
