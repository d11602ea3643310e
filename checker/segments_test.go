package checker

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
)

// storedRun is a real run kept as test data by the reports package:
// redis-single, counter, 8 clients, pause-holder faults, lost updates.
const storedRun = "../reports/testdata/run-60s-8c/history.jsonl.gz"

// sameVerdicts checks recs whole and in segments and fails if the verdicts
// differ. It returns the verdicts.
func sameVerdicts(t *testing.T, name string, recs []history.Record) (mutex, resource Verdict) {
	t.Helper()
	opt := Options{Timeout: 20 * time.Second}
	cut := Check(recs, opt)
	opt.Whole = true
	old := Check(recs, opt)
	if old.Mutex.Verdict == Unknown || old.Resource.Verdict == Unknown {
		t.Logf("%s: whole check undecided, not compared", name)
		return cut.Mutex.Verdict, cut.Resource.Verdict
	}
	if cut.Mutex.Verdict != old.Mutex.Verdict || cut.Resource.Verdict != old.Resource.Verdict {
		t.Errorf("%s: cut mutex %s resource %s, whole mutex %s resource %s", name,
			cut.Mutex.Verdict, cut.Resource.Verdict, old.Mutex.Verdict, old.Resource.Verdict)
	}
	return old.Mutex.Verdict, old.Resource.Verdict
}

// cutEverywhere lowers minSegment so that small histories are cut at every
// point the rules allow.
func cutEverywhere(t *testing.T) {
	old := minSegment
	minSegment = 1
	t.Cleanup(func() { minSegment = old })
}

func TestSegmentsMatchWholeOnHandMadeCases(t *testing.T) {
	cutEverywhere(t)
	for _, tc := range checkCases {
		sameVerdicts(t, tc.name, build(tc.ops...))
	}
}

func TestSegmentsMatchWholeOnStoredRun(t *testing.T) {
	recs := historytest.ReadGz(t, storedRun)
	for _, n := range []int{200, 1} {
		old := minSegment
		minSegment = n
		mutex, resource := sameVerdicts(t, fmt.Sprintf("stored run, segments of %d+", n), recs)
		minSegment = old
		if mutex != Invalid || resource != Invalid {
			t.Fatalf("stored run: mutex %s resource %s, want both invalid (it lost updates)", mutex, resource)
		}
	}
	lockOps, counterOps := modelOps(history.Ops(recs))
	if n, m := len(segmentsOf(lockOps, cutLocks)), len(segmentsOf(counterOps, cutCounter)); n < 5 || m < 5 {
		t.Errorf("the stored run was cut into %d lock and %d counter segments, want several", n, m)
	}
}

func TestSegmentsMatchWholeOnGenerated(t *testing.T) {
	cutEverywhere(t)
	for _, g := range []historytest.Counter{
		{Clients: 1, Keys: 1, Ops: 300},
		{Clients: 3, Keys: 1, Ops: 900},
		{Clients: 8, Keys: 1, Ops: 1500},
		{Clients: 8, Keys: 4, Ops: 3000},
		{Clients: 8, Keys: 1, Ops: 1500, Overlaps: 2},
		{Clients: 8, Keys: 2, Ops: 1500, Overlaps: 3},
		{Clients: 4, Keys: 1, Ops: 1500, Unknowns: 4},
		{Clients: 4, Keys: 1, Ops: 1500, UnknownReleases: 2},
		{Clients: 8, Keys: 3, Ops: 3000, Overlaps: 1, Unknowns: 5, UnknownReleases: 2},
	} {
		for seed := range uint64(3) {
			g.Seed = seed
			name := fmt.Sprintf("%+v", g)
			mutex, resource := sameVerdicts(t, name, g.Records())
			lockOps, counterOps := modelOps(history.Ops(g.Records()))
			if len(segmentsOf(lockOps, cutLocks)) < 2 || len(segmentsOf(counterOps, cutCounter)) < 2 {
				t.Errorf("%s: not cut", name)
			}
			wantValid := g.Overlaps == 0
			if (mutex == Valid) != wantValid || (resource == Valid) != wantValid {
				t.Errorf("%s: mutex %s resource %s, want valid %v", name, mutex, resource, wantValid)
			}
		}
	}
}

// TestSegmentsMatchWholeOnMutatedHistories breaks generated histories at
// random (a value read, an outcome, a time, a missing completion, a crash)
// and compares the two checks on each.
func TestSegmentsMatchWholeOnMutatedHistories(t *testing.T) {
	cutEverywhere(t)
	rng := rand.New(rand.NewPCG(7, 7))
	invalid := 0
	for i := range 60 {
		g := historytest.Counter{Clients: 1 + rng.IntN(6), Keys: 1 + rng.IntN(2), Ops: 150 + rng.IntN(300), Seed: uint64(i)}
		recs := g.Records()
		for range 1 + rng.IntN(3) {
			recs = mutate(rng, recs)
		}
		mutex, resource := sameVerdicts(t, fmt.Sprintf("mutated #%d", i), recs)
		if mutex == Invalid || resource == Invalid {
			invalid++
		}
	}
	if invalid == 0 {
		t.Fatal("no mutation made a history invalid: the comparison proves little")
	}
}

// mutate changes one record of recs.
func mutate(rng *rand.Rand, recs []history.Record) []history.Record {
	out := append([]history.Record(nil), recs...)
	i := rng.IntN(len(out))
	r := &out[i]
	switch rng.IntN(6) {
	case 0: // a different value read
		if r.Value != nil {
			r.Value = history.Int64(*r.Value + int64(rng.IntN(3)) - 1)
		}
	case 1: // an unknown outcome
		if r.Type == history.OK || r.Type == history.Fail {
			r.Type = history.Info
		}
	case 2: // a failed one
		if r.Type == history.OK {
			r.Type = history.Fail
		}
	case 3: // a completion lost
		if r.Type != history.Invoke {
			out = append(out[:i], out[i+1:]...)
		}
	case 4: // a time moved
		r.Time += int64(rng.IntN(4_000_000)) - 2_000_000
	case 5: // the coordinator kills a client
		if r.Process >= 0 {
			out = append(out, history.Record{Process: r.Process, Seq: 1_000_000 + i, Type: history.Invoke,
				F: history.FCrash, Key: r.Key, Time: r.Time})
		}
	}
	return out
}
