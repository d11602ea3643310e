package checker

import (
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

// hist builds histories by hand: each op is an invoke and a completion at
// the given times (ms). A completion type of "" leaves the op open.
type op struct {
	p          int
	f          string
	call, ret  int64
	outcome    history.Type
	value      int64
	hasValue   bool
	errText    string
	tokenValue int64
	validity   int64 // ms
}

func build(ops ...op) []history.Record {
	var recs []history.Record
	seq := map[int]int{}
	type ev struct {
		t   int64
		rec history.Record
	}
	var evs []ev
	for _, o := range ops {
		seq[o.p]++
		inv := history.Record{Process: o.p, Seq: seq[o.p], Type: history.Invoke, F: o.f, Key: "k", Time: o.call * 1e6}
		evs = append(evs, ev{o.call, inv})
		if o.outcome != "" {
			done := inv
			done.Type, done.Time, done.Error, done.Token, done.Validity = o.outcome, o.ret*1e6, o.errText, o.tokenValue, o.validity*1e6
			if o.hasValue {
				done.Value = history.Int64(o.value)
			}
			evs = append(evs, ev{o.ret, done})
		}
	}
	// Records arrive in time order, as from a live run.
	for i := range evs {
		for j := i + 1; j < len(evs); j++ {
			if evs[j].t < evs[i].t {
				evs[i], evs[j] = evs[j], evs[i]
			}
		}
	}
	for i, e := range evs {
		e.rec.Index = i
		recs = append(recs, e.rec)
	}
	return recs
}

func acq(p int, call, ret int64, t history.Type) op {
	return op{p: p, f: history.FAcquire, call: call, ret: ret, outcome: t}
}
func rel(p int, call, ret int64, t history.Type) op {
	return op{p: p, f: history.FRelease, call: call, ret: ret, outcome: t}
}
func incr(p int, call, ret int64, t history.Type, read int64) op {
	return op{p: p, f: history.FIncr, call: call, ret: ret, outcome: t, value: read, hasValue: true}
}

// crash is the coordinator killing client p: an op that never completes.
func crash(p int, call int64) op { return op{p: p, f: history.FCrash, call: call} }

// blind is an increment whose completion never came (killed client).
func blind(p int, call int64) op { return op{p: p, f: history.FIncr, call: call} }

func final(call, ret int64, v int64) op {
	return op{p: history.NemesisProcess, f: history.FRead, call: call, ret: ret, outcome: history.OK, value: v, hasValue: true}
}

// checkCases are hand-made histories with the verdicts they must get.
var checkCases = []struct {
	name          string
	ops           []op
	mutex, data   Verdict
	lost          int
	mutexNamesOps bool
}{
	{
		name: "serial valid history",
		ops: []op{
			acq(0, 0, 1, history.OK), incr(0, 2, 3, history.OK, 0), rel(0, 4, 5, history.OK),
			acq(1, 1, 6, history.OK), incr(1, 7, 8, history.OK, 1), rel(1, 9, 10, history.OK),
			final(11, 12, 2),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "two holders overlap",
		ops: []op{
			acq(0, 0, 1, history.OK), acq(1, 2, 3, history.OK),
			rel(1, 4, 5, history.OK), rel(0, 6, 7, history.Fail),
		},
		mutex: Invalid, data: Valid, mutexNamesOps: true,
	},
	{
		name: "indeterminate acquire is not treated as held",
		ops: []op{
			// c0's acquire timed out: it may have taken effect and expired,
			// or never happened. c1 acquiring afterwards is legal.
			acq(0, 0, 1, history.Info), acq(1, 2, 3, history.OK), rel(1, 4, 5, history.OK),
			acq(2, 6, 7, history.OK), rel(2, 8, 9, history.OK),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "failed acquire changes nothing",
		ops: []op{
			acq(0, 0, 1, history.OK), acq(1, 0, 2, history.Fail), rel(0, 3, 4, history.OK),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "ok release by a client that does not hold the lock",
		ops: []op{
			acq(0, 0, 1, history.OK), rel(1, 2, 3, history.OK), rel(0, 4, 5, history.OK),
		},
		mutex: Invalid, data: Valid,
	},
	{
		name: "refused release after expiry, no one else acquired",
		ops: []op{
			acq(0, 0, 1, history.OK), rel(0, 5, 6, history.Fail), acq(1, 7, 8, history.OK), rel(1, 9, 10, history.OK),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "rejected fenced write has no effect",
		ops: []op{
			// c0 read 0 then stalled; c1 took over and incremented; c0's
			// stale write was rejected. The data is intact.
			incr(0, 0, 10, history.Fail, 0), incr(1, 2, 3, history.OK, 0), incr(1, 4, 5, history.OK, 1),
			final(11, 12, 2),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "lost update",
		ops: []op{
			incr(0, 0, 10, history.OK, 0), incr(1, 2, 3, history.OK, 0), final(11, 12, 1),
		},
		mutex: Valid, data: Invalid, lost: 1,
	},
	{
		name: "indeterminate write that landed is allowed",
		ops: []op{
			incr(0, 0, 1, history.Info, 0), incr(1, 2, 3, history.OK, 1), final(4, 5, 2),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "indeterminate write that did not land is allowed",
		ops: []op{
			incr(0, 0, 1, history.Info, 0), incr(1, 2, 3, history.OK, 0), final(4, 5, 1),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "a crashed holder's lease may run out",
		ops: []op{
			// c0 died holding the lock (no release); after its lease ran
			// out c1 acquired. Nobody alive believed in two holders.
			acq(0, 0, 1, history.OK), crash(0, 2), acq(1, 5, 6, history.OK), rel(1, 7, 8, history.OK),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "a holder that did not crash still overlaps",
		ops: []op{
			acq(0, 0, 1, history.OK), crash(2, 2), acq(1, 5, 6, history.OK), rel(1, 7, 8, history.OK),
		},
		mutex: Invalid, data: Valid,
	},
	{
		name: "a blind write of a killed client may have landed",
		ops: []op{
			// c0 was killed inside its critical section: its read value was
			// never reported, yet its write may have landed.
			blind(0, 0), incr(1, 2, 3, history.OK, 1), final(4, 5, 2),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "a blind write cannot explain two",
		ops: []op{
			blind(0, 0), incr(1, 2, 3, history.OK, 2), final(4, 5, 3),
		},
		mutex: Valid, data: Invalid,
	},
	{
		name: "a waiting acquire granted after a later one",
		ops: []op{
			// c1 waits from 15 to 100 while c2, come later, holds from 40:
			// cutting in c2's hold must carry c1's acquire over.
			acq(0, 0, 10, history.OK), rel(0, 20, 30, history.OK),
			acq(1, 15, 100, history.OK), acq(2, 25, 40, history.OK), rel(2, 50, 105, history.OK),
			rel(1, 110, 120, history.OK),
		},
		mutex: Valid, data: Valid,
	},
	{
		name: "final read exposes a stale write",
		ops: []op{
			incr(0, 0, 1, history.OK, 0), incr(1, 2, 3, history.OK, 1), final(4, 5, 1),
		},
		mutex: Valid, data: Invalid, lost: 1,
	},
}

func TestCheck(t *testing.T) {
	for _, tc := range checkCases {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(build(tc.ops...), Options{Timeout: 10 * time.Second})
			if rep.Mutex.Verdict != tc.mutex {
				t.Errorf("mutex verdict %s, want %s", rep.Mutex.Verdict, tc.mutex)
			}
			if rep.Resource.Verdict != tc.data {
				t.Errorf("resource verdict %s, want %s", rep.Resource.Verdict, tc.data)
			}
			if rep.Stats.Lost != tc.lost {
				t.Errorf("lost %d, want %d", rep.Stats.Lost, tc.lost)
			}
			if tc.data == Invalid && len(rep.Resource.Violations) == 0 {
				t.Error("invalid resource check names no violation")
			}
			if tc.mutexNamesOps {
				if len(rep.Mutex.Violations) == 0 || len(rep.Mutex.Violations[0].Ops) < 2 {
					t.Errorf("overlap not named: %+v", rep.Mutex.Violations)
				}
			}
		})
	}
}

func TestCheckTimeoutIsUnknown(t *testing.T) {
	// Forty concurrent increments of unknown outcome and an impossible
	// final value: proving it illegal means trying every subset, far longer
	// than the timeout, which must give unknown.
	var ops []op
	for i := range 40 {
		ops = append(ops, incr(i, 0, 1, history.Info, int64(i%3)))
	}
	ops = append(ops, final(2, 3, 1000))
	rep := Check(build(ops...), Options{Timeout: 50 * time.Millisecond})
	if rep.Resource.Verdict != Unknown || rep.Resource.Note == "" {
		t.Fatalf("verdict %s (%q) under a timeout, want unknown with a note", rep.Resource.Verdict, rep.Resource.Note)
	}
}

func TestVerdictDecidedByWorkload(t *testing.T) {
	rep := Report{Mutex: Result{Verdict: Invalid}, Resource: Result{Verdict: Valid}}
	if rep.Verdict(true) != Valid || rep.Verdict(false) != Invalid {
		t.Fatal("the resource check decides with a resource, the mutex check without")
	}
}
