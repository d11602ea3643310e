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
