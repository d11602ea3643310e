package checker

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

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

// TestStreamingCutsMatchWholeCuts: the cutters, handed a key's ops one by
// one, cut exactly where cutting the key's whole list did (wholecut_test),
// on generated histories with every planted anomaly, broken at random, and
// on the stored run, cut as small as the rules allow and as Check cuts.
func TestStreamingCutsMatchWholeCuts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 34))
	histories := map[string][]history.Record{"stored run": historytest.ReadGz(t, storedRun)}
	for i := range 40 {
		g := historytest.Counter{Clients: 1 + rng.IntN(8), Keys: 1 + rng.IntN(3), Ops: 100 + rng.IntN(3000), Seed: uint64(i),
			Overlaps: rng.IntN(3), Unknowns: rng.IntN(4), UnknownReleases: rng.IntN(3), LateOverlap: i%4 == 0}
		recs := g.Records()
		for range rng.IntN(4) {
			recs = mutate(rng, recs)
		}
		histories[fmt.Sprintf("#%d %+v", i, g)] = recs
	}
	cuts := 0
	for _, segMin := range []int{1, 7, 200} {
		old := minSegment
		minSegment = segMin
		for name, recs := range histories {
			lockOps, counterOps := modelOps(history.Ops(recs))
			for _, m := range []struct {
				name string
				got  []segment
				want []segment
			}{
				{MutexCheck, segmentsOf(lockOps, cutLocks), wholeCutOf(lockOps, wholeCutLocks)},
				{ResourceCheck, segmentsOf(counterOps, cutCounter), wholeCutOf(counterOps, wholeCutCounter)},
			} {
				if err := sameSegments(m.got, m.want); err != nil {
					t.Errorf("segments of %d+, %s, %s: %v", segMin, name, m.name, err)
				}
				cuts += len(m.want) - 1
			}
		}
		minSegment = old
	}
	if cuts < 1000 {
		t.Errorf("%d cuts in all: too few to prove the cutters agree", cuts)
	}
}

// sameSegments says how got differs from want: the segments' starts and
// their ops, in order.
func sameSegments(got, want []segment) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d segments, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.start != w.start || len(g.ops) != len(w.ops) {
			return fmt.Errorf("segment %d: %d ops from %v, want %d from %v", i, len(g.ops), g.start, len(w.ops), w.start)
		}
		for k := range w.ops {
			if g.ops[k].Metadata != w.ops[k].Metadata || g.ops[k].Input != w.ops[k].Input {
				return fmt.Errorf("segment %d, op %d: %+v, want %+v", i, k, g.ops[k].Input, w.ops[k].Input)
			}
		}
	}
	return nil
}

// TestStreamingVisualizationPicksAsWhole: what a streaming check keeps for
// its visualization, and its note, are what visualized picks from every
// segment, on histories that fit a page, that do not (valid, and failing
// on one key or many) and on more keys than a page draws.
func TestStreamingVisualizationPicksAsWhole(t *testing.T) {
	old := minSegment
	minSegment = 50
	t.Cleanup(func() { minSegment = old })
	for _, g := range []historytest.Counter{
		{Clients: 4, Keys: 2, Ops: 6000, Seed: 1, Overlaps: 2},
		{Clients: 8, Keys: 3, Ops: 60_000, Seed: 2},
		{Clients: 8, Keys: 3, Ops: 60_000, Seed: 3, Overlaps: 30, Unknowns: 3},
		{Clients: 8, Keys: 1, Ops: 40_000, Seed: 4, LateOverlap: true},
		{Clients: 8, Keys: 150, Ops: 60_000, Seed: 5, Overlaps: 5},
	} {
		recs := g.Records()
		rep := Check(recs, Options{Timeout: time.Minute})
		lockOps, counterOps := modelOps(history.Ops(recs))
		for _, m := range []struct {
			got   Result
			model porcupine.Model
			segs  []segment
		}{
			{rep.Mutex, segmented(mutexModel), segmentsOf(lockOps, cutLocks)},
			{rep.Resource, segmented(counterModel), segmentsOf(counterOps, cutCounter)},
		} {
			var failing []segment
			total := 0
			for _, s := range m.segs {
				total += len(s.ops)
				res, ok := sweep(s)
				if !ok {
					res = porcupine.CheckOperationsTimeout(m.model, s.withStart(), time.Minute)
				}
				if res != porcupine.Ok {
					failing = append(failing, s)
				}
			}
			firstFailing := 0
			if len(failing) > 0 {
				firstFailing = len(failing[0].ops)
			}
			want, note := visualized(m.segs, failing, len(failing), firstFailing, total)
			name := fmt.Sprintf("%+v %s", g, m.got.Check)
			if m.got.Visualized != note {
				t.Errorf("%s: note %q, want %q", name, m.got.Visualized, note)
			}
			if !sameOpsOf(m.got.viz, want) {
				t.Errorf("%s: draws %d segments, want %d, or other ops", name, len(m.got.viz), len(want))
			}
		}
	}
}

// sameOpsOf reports whether two picks hold the same history ops, in order:
// a pick detached from the history holds copies of them.
func sameOpsOf(got, want []segment) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if got[i].start != want[i].start || len(got[i].ops) != len(want[i].ops) {
			return false
		}
		for k := range want[i].ops {
			g, w := got[i].ops[k].Metadata.(*history.Op), want[i].ops[k].Metadata.(*history.Op)
			if g.InvokeIndex != w.InvokeIndex || got[i].ops[k].ClientId != want[i].ops[k].ClientId {
				return false
			}
		}
	}
	return true
}

// TestVizKeepKeepsWhatVisualizedPicks offers segments of random lengths
// (some longer than a page) on random keys to a vizKeep, in place order per
// key or in any order, and checks that visualized picks from what it kept
// what it picks from all of them.
func TestVizKeepKeepsWhatVisualizedPicks(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	index := 0
	for i := range 150 {
		keys := 1 + rng.IntN(100)
		type offer struct {
			key   string
			place int
			seg   segment
		}
		var offers []offer
		places := map[string]int{}
		for range rng.IntN(200) {
			key := fmt.Sprintf("k%d", rng.IntN(keys))
			n := rng.IntN(300)
			switch rng.IntN(30) {
			case 0:
				n = VizMaxOps/2 + rng.IntN(VizMaxOps)
			case 1:
				n = 0
			}
			s := segment{ops: make([]porcupine.Operation, n)}
			for k := range s.ops {
				s.ops[k].Metadata = &history.Op{InvokeIndex: index}
				index++
			}
			offers = append(offers, offer{key, places[key], s})
			places[key]++
		}
		// The order of the whole: by key, then place.
		all := slices.Clone(offers)
		slices.SortStableFunc(all, func(a, b offer) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.place, b.place)) })
		var segs []segment
		total := 0
		for _, o := range all {
			segs = append(segs, o.seg)
			total += len(o.seg.ops)
		}
		if i%2 == 1 { // as a failing vizKeep is offered: in any order
			rng.Shuffle(len(offers), func(a, b int) { offers[a], offers[b] = offers[b], offers[a] })
		}
		var v vizKeep
		for _, o := range offers {
			v.offer(o.key, o.place, o.seg)
		}
		firstLen := 0
		if len(segs) > 0 {
			firstLen = len(segs[0].ops)
		}
		for _, failed := range []int{0, len(segs)} {
			got, gotNote := visualized(v.kept(), v.kept(), failed, v.firstLen(), total)
			want, wantNote := visualized(segs, segs, failed, firstLen, total)
			if gotNote != wantNote || !sameOpsOf(got, want) {
				t.Fatalf("#%d, %d failed: picks %d segments (%s), want %d (%s)", i, failed, len(got), gotNote, len(want), wantNote)
			}
		}
	}
}
