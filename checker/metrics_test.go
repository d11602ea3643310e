package checker

import (
	"testing"

	"github.com/locktest/locktest/history"
)

// TestRecoveryIgnoresTheTarget: the time to the next acquisition after a
// fault skips the targeted client's own grants, however the target is
// written (client-clock-skew and slow-resource-write add to the name).
func TestRecoveryIgnoresTheTarget(t *testing.T) {
	ok := history.OK
	for _, target := range []string{"c2", "c2 +2s ×1", "c2:resource"} {
		recs := withFault(build(acq(2, 0, 10, ok), rel(2, 500, 510, ok), acq(2, 520, 530, ok), rel(2, 600, 610, ok),
			acq(1, 50, 900, ok), rel(1, 950, 960, ok)), "slow-resource-write", history.AimWrite, target, 100, 3100)
		rs := Measure(recs).Recoveries
		if len(rs) != 1 || rs[0].NextAcquireMs == nil || *rs[0].NextAcquireMs != 800 {
			t.Errorf("target %q: recoveries %+v, want c1's grant 800 ms after the fault began", target, rs)
		}
	}
	recs := withFault(build(acq(2, 0, 10, ok), rel(2, 500, 510, ok), acq(1, 520, 530, ok)), "pause-node", history.AimServers, "redis-0", 100, 600)
	if rs := Measure(recs).Recoveries; len(rs) != 1 || rs[0].NextAcquireMs == nil || *rs[0].NextAcquireMs != 430 {
		t.Errorf("node fault: recoveries %+v, want the first grant after it, 430 ms", rs)
	}
}

// TestRecoveryOfAFaultRecordedLate: a fault's start recorded after the
// completion of an acquire that returned after it (the coordinator's
// record came a moment late) still has that acquire as its recovery when
// the faults are learned as they come, as Measure finds it on the whole
// history; an acquire that returned before the fault began is none.
func TestRecoveryOfAFaultRecordedLate(t *testing.T) {
	ms := int64(1_000_000)
	fault := history.Fault{Name: "pause-holder", Target: "c2", Start: 100 * ms}
	for _, tc := range []struct {
		name   string
		ret    int64 // c1's acquire's return
		wantMs float64
	}{
		{"returned after the fault began", 150 * ms, 50},
		{"returned before", 90 * ms, -1},
	} {
		var r RecoveryMeter
		op := history.Op{Process: 1, F: history.FAcquire, Outcome: history.OK, Call: 10 * ms, Return: tc.ret}
		r.Add(&op, tc.ret-int64(history.AppendSkew))
		r.AddFault(fault)
		got := r.recoveries(200 * ms)
		switch {
		case len(got) != 1:
			t.Errorf("%s: recoveries %+v, want one", tc.name, got)
		case tc.wantMs < 0 && got[0].NextAcquireMs != nil:
			t.Errorf("%s: recovered after %v ms, want no recovery", tc.name, *got[0].NextAcquireMs)
		case tc.wantMs >= 0 && (got[0].NextAcquireMs == nil || *got[0].NextAcquireMs != tc.wantMs):
			t.Errorf("%s: recoveries %+v, want the acquire %v ms after the fault began", tc.name, got, tc.wantMs)
		}
	}
}
