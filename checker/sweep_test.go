package checker

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
)

// sweepTally counts the segments the sweep decided, by verdict, and those it
// left to porcupine.
type sweepTally struct{ ok, illegal, searched int }

// compareSweep checks every segment of recs, cut as Check cuts them, by the
// sweep and by porcupine, and fails t where the sweep decides otherwise.
func compareSweep(t testing.TB, name string, recs []history.Record, tally *sweepTally) {
	t.Helper()
	lockOps, counterOps := modelOps(history.Ops(recs))
	for _, m := range []struct {
		name  string
		model porcupine.Model
		segs  []segment
	}{
		{MutexCheck, segmented(mutexModel), segmentsOf(lockOps, cutLocks)},
		{ResourceCheck, segmented(counterModel), segmentsOf(counterOps, cutCounter)},
	} {
		for i, s := range m.segs {
			got, decided := sweep(s)
			if !decided {
				tally.searched++
				continue
			}
			want := porcupine.CheckOperationsTimeout(m.model, s.withStart(), 10*time.Second)
			if want == porcupine.Unknown {
				t.Logf("%s: %s segment %d: porcupine undecided, not compared", name, m.name, i)
				continue
			}
			if got != want {
				t.Errorf("%s: %s segment %d of %d ops from %v: sweep %s, porcupine %s", name, m.name, i, len(s.ops), s.start, got, want)
				for _, op := range s.ops {
					t.Logf("  %+v %d %d", op.Input, op.Call, op.Return)
				}
			}
			if got == porcupine.Ok {
				tally.ok++
			} else {
				tally.illegal++
			}
		}
	}
}

// TestSweepMatchesPorcupine compares the sweep with porcupine segment by
// segment on generated histories, valid, with planted anomalies (granted
// overlaps, unknown writes and releases) and broken at random (mutate),
// cut as small as the rules allow and cut as Check cuts them.
func TestSweepMatchesPorcupine(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	var tally sweepTally
	for _, segMin := range []int{1, 40} {
		old := minSegment
		minSegment = segMin
		for i := range 80 {
			g := historytest.Counter{Clients: 1 + rng.IntN(6), Keys: 1 + rng.IntN(2), Ops: 60 + rng.IntN(300), Seed: uint64(i),
				Overlaps: rng.IntN(3), Unknowns: rng.IntN(2), UnknownReleases: rng.IntN(2)}
			recs := g.Records()
			for range rng.IntN(4) {
				recs = mutate(rng, recs)
			}
			compareSweep(t, fmt.Sprintf("segments of %d+, history #%d %+v", segMin, i, g), recs, &tally)
		}
		minSegment = old
	}
	t.Logf("sweep decided %d segments linearizable and %d not; %d went to porcupine", tally.ok, tally.illegal, tally.searched)
	if tally.ok < 100 || tally.illegal < 20 {
		t.Errorf("the sweep decided %d segments linearizable and %d not: too few to prove it agrees", tally.ok, tally.illegal)
	}
}

// TestSweepMatchesPorcupineOnHandMadeCases compares the two on the checks'
// hand-made histories, whole and cut wherever the rules allow.
func TestSweepMatchesPorcupineOnHandMadeCases(t *testing.T) {
	var tally sweepTally
	for _, segMin := range []int{1, 1 << 30} {
		old := minSegment
		minSegment = segMin
		for _, tc := range checkCases {
			compareSweep(t, tc.name, build(tc.ops...), &tally)
		}
		minSegment = old
	}
	if tally.illegal == 0 {
		t.Error("the sweep decided no hand-made segment illegal: the comparison proves little")
	}
}

// TestSweepDecidesKnownOutcomes: a segment with no unknown outcome is never
// left to porcupine on histories shaped as runs record them, so a long
// run's check costs a sweep, not a search.
func TestSweepDecidesKnownOutcomes(t *testing.T) {
	for _, g := range []historytest.Counter{
		{Clients: 8, Keys: 4, Ops: 20_000, Seed: 1},
		{Clients: 8, Keys: 1, Ops: 20_000, Seed: 2, Overlaps: 3},
	} {
		recs := g.Records()
		var tally sweepTally
		compareSweep(t, fmt.Sprintf("%+v", g), recs, &tally)
		if tally.searched > 0 {
			t.Errorf("%+v: %d segments with known outcomes went to porcupine", g, tally.searched)
		}
		if want := g.Overlaps > 0; (tally.illegal > 0) != want {
			t.Errorf("%+v: %d segments illegal, want some: %v", g, tally.illegal, want)
		}
	}
}

// TestSweepMatchesPorcupineOnStoredRun compares the two on a real run's
// segments: pause-holder faults, lost updates, unknown outcomes.
func TestSweepMatchesPorcupineOnStoredRun(t *testing.T) {
	var tally sweepTally
	compareSweep(t, "stored run", historytest.ReadGz(t, storedRun), &tally)
	if tally.ok == 0 || tally.illegal == 0 {
		t.Errorf("stored run: the sweep decided %d segments linearizable and %d not, want some of each", tally.ok, tally.illegal)
	}
}

// FuzzSweep compares the two on generated histories broken by mutations the
// fuzzer picks: go test -fuzz FuzzSweep ./checker.
func FuzzSweep(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed, uint8(seed%6+1), uint16(100+seed*37), uint8(seed%4))
	}
	f.Fuzz(func(t *testing.T, seed uint64, clients uint8, ops uint16, mutations uint8) {
		old := minSegment
		minSegment = 1
		defer func() { minSegment = old }()
		rng := rand.New(rand.NewPCG(seed, 5))
		g := historytest.Counter{Clients: int(clients%8) + 1, Keys: 1 + rng.IntN(2), Ops: int(ops%600) + 3, Seed: seed,
			Overlaps: rng.IntN(3), Unknowns: rng.IntN(2), UnknownReleases: rng.IntN(2)}
		recs := g.Records()
		for range mutations % 8 {
			recs = mutate(rng, recs)
		}
		var tally sweepTally
		compareSweep(t, fmt.Sprintf("%+v", g), recs, &tally)
	})
}

// TestLateLostUpdateFound plants one lost update in the last thousandth of
// a long history (100k ops on 64 keys) and wants the resource check to find
// it, named, near where it happened (the mutex check may not: the second
// grant may come as the holder's release is under way). The same check of ten
// million ops is in the reports package's BenchmarkAnalyzeFloor.
func TestLateLostUpdateFound(t *testing.T) {
	recs := historytest.Counter{Clients: 8, Keys: 64, Ops: 100_000, Seed: 9, LateOverlap: true}.Records()
	rep := Check(recs, Options{})
	if rep.Resource.Verdict != Invalid || rep.Stats.Lost != 1 {
		t.Fatalf("resource %s, %d lost: want invalid, 1 lost", rep.Resource.Verdict, rep.Stats.Lost)
	}
	start, end := recs[0].Time, recs[len(recs)-1].Time
	if len(rep.Resource.Violations) != 1 || rep.Resource.FirstViolationS == nil {
		t.Fatalf("resource violations %+v: want the lost update named", rep.Resource.Violations)
	}
	if at, late := *rep.Resource.FirstViolationS, 0.99*float64(end-start)/1e9; at < late {
		t.Errorf("the lost update was found at %.3fs, want it in the last 1%% (after %.3fs), where it was planted", at, late)
	}
}
