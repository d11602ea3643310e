package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

func renew(p int, call, ret int64, t history.Type) op {
	return op{p: p, f: history.FRenew, call: call, ret: ret, outcome: t}
}

// TestClassifyLease: a violation is inside the lease when a lease still
// valid (by its acquire's call, or its last renewal, plus the TTL) was
// granted again, or when data was lost while every lease still ran;
// beyond it otherwise.
func TestClassifyLease(t *testing.T) {
	ok, fail := history.OK, history.Fail
	cases := []struct {
		name string
		ttl  time.Duration
		ops  []op
		want LeaseClass // "" for no finding
		why  string
	}{
		{"holder paused past its lease: beyond", time.Second,
			[]op{acq(0, 0, 10, ok), incr(0, 10, 2100, ok, 0), rel(0, 2100, 2110, fail),
				acq(1, 50, 1100, ok), incr(1, 1100, 1150, ok, 0), rel(1, 1150, 1160, ok)},
			BeyondLease, "when c0's lease may have run out (it ran until at least 1.000s)"},
		{"a live lease granted again: inside", time.Second,
			[]op{acq(0, 0, 10, ok), incr(0, 10, 500, ok, 0), rel(0, 500, 510, ok),
				acq(1, 20, 30, ok), incr(1, 30, 400, ok, 0), rel(1, 400, 410, ok)},
			InsideLease, "c1 was granted \"k\" at 0.030s while c0's lease on it ran until at least 1.000s"},
		{"renewals keep the lease: granted again inside it", time.Second,
			[]op{acq(0, 0, 10, ok), renew(0, 800, 810, ok), renew(0, 1600, 1610, ok), rel(0, 2900, 3000, fail),
				acq(1, 100, 2000, ok), rel(1, 2100, 2110, ok)},
			InsideLease, "ran until at least 2.600s"},
		{"a refused renewal does not", time.Second,
			[]op{acq(0, 0, 10, ok), renew(0, 800, 810, fail), rel(0, 2900, 3000, fail),
				acq(1, 1100, 2000, ok), rel(1, 2100, 2110, ok)},
			BeyondLease, "when c0's lease may have run out (it ran until at least 1.000s)"},
		{"data lost with no overlap, every section inside its lease: inside", time.Second,
			[]op{acq(0, 0, 10, ok), incr(0, 10, 100, ok, 5), rel(0, 100, 110, ok),
				acq(1, 200, 210, ok), incr(1, 210, 300, ok, 5), rel(1, 300, 310, ok)},
			InsideLease, "each ending while its holder's lease still ran"},
		{"a stale write rolls the value back: the rightful holders after it read twice, beyond", time.Second,
			[]op{acq(0, 0, 10, ok), incr(0, 10, 2100, ok, 0), rel(0, 2100, 2110, fail),
				acq(1, 1100, 1110, ok), incr(1, 1110, 1150, ok, 0), rel(1, 1150, 1160, ok),
				acq(2, 1200, 1210, ok), incr(2, 1210, 1250, ok, 1), rel(2, 1250, 1260, ok),
				acq(1, 2200, 2210, ok), incr(1, 2210, 2250, ok, 1), rel(1, 2250, 2260, ok)},
			BeyondLease, "when c0's lease may have run out"},
		{"no violation", time.Second,
			[]op{acq(0, 0, 10, ok), incr(0, 10, 100, ok, 0), rel(0, 100, 110, ok),
				acq(1, 200, 210, ok), incr(1, 210, 300, ok, 1), rel(1, 300, 310, ok)}, "", ""},
		{"no lease to judge by", 0,
			[]op{acq(0, 0, 10, ok), acq(1, 20, 30, ok)}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := build(tc.ops...)
			got := ClassifyLease(history.Ops(recs), history.Faults(recs), tc.ttl, history.Start(recs))
			switch {
			case got == nil && tc.want != "":
				t.Fatalf("no finding, want %s", tc.want)
			case got == nil:
				return
			case got.Class != tc.want:
				t.Fatalf("class %s (%s), want %s", got.Class, got.Why, tc.want)
			case !strings.Contains(got.Why, tc.why):
				t.Errorf("why %q lacks %q", got.Why, tc.why)
			}
		})
	}
}

func TestLeaseClassOrder(t *testing.T) {
	order := []LeaseClass{NoFaultNeeded, InsideLease, BeyondLease, ""}
	for i, c := range order {
		for j, d := range order {
			if c.Worse(d) != (i < j) {
				t.Errorf("%q.Worse(%q) = %v", c, d, c.Worse(d))
			}
		}
	}
}

// TestClassifyLeaseUnderClockFaults: a lease is measured on the server's
// clock; a strike that moved it ends leases early, which breaks the timing
// every lease lock assumes, so what it lets happen is beyond the lease. A
// client's skewed clock is no such excuse: a lock that trusts it is wrong.
func TestClassifyLeaseUnderClockFaults(t *testing.T) {
	ok := history.OK
	ops := build(acq(0, 0, 10, ok), incr(0, 10, 500, ok, 0), rel(0, 500, 510, ok),
		acq(1, 20, 30, ok), incr(1, 30, 400, ok, 0), rel(1, 400, 410, ok))
	for _, tc := range []struct {
		aim  history.Aim
		want LeaseClass
	}{
		{history.AimClocks, BeyondLease},
		{history.AimHolder, InsideLease},
	} {
		recs := withFault(ops, "jump", tc.aim, "redis-0 +2s", 5, 300)
		got := ClassifyLease(history.Ops(recs), history.Faults(recs), time.Second, history.Start(recs))
		if got == nil || got.Class != tc.want {
			t.Errorf("aim %s: %+v, want %s", tc.aim, got, tc.want)
		}
	}
}

// TestClassifyLateGrant: a client whose acquire was struck in flight may
// have been granted before the rightful holder and learned of it only
// after its lease ran out: the overlap is beyond the lease, though its
// acquire returned last. A waiter no fault struck was granted when it
// returned: the same overlap is inside the holder's lease. So is the
// late grant of a client stopped at its own checkpoint that still claimed
// a lease: its own logic ran after the pause and should have given the
// grant back.
func TestClassifyLateGrant(t *testing.T) {
	ok := history.OK
	// c1's acquire runs from 0 to 3900 ms, claiming validity (ms); c0 is
	// granted at 3700 ms and still holds when c1 returns.
	late := func(validity int64) []history.Record { // withFault sorts in place: a fresh history each
		a := acq(1, 0, 3900, ok)
		a.validity = validity
		return build(a, incr(1, 3900, 3950, ok, 0), rel(1, 3950, 3960, ok),
			acq(0, 3690, 3700, ok), incr(0, 3700, 4000, ok, 0), rel(0, 4000, 4010, ok))
	}
	ops := func() []history.Record { return late(0) }
	atPoint := func(validity int64, point string) []history.Record {
		recs := withFault(late(validity), "pause-acquire", history.AimWaiter, "c1", 100, 3890)
		for i := range recs {
			if recs[i].Type == history.FaultStart {
				recs[i].Point = point
			}
		}
		return recs
	}
	for _, tc := range []struct {
		name string
		recs []history.Record
		want LeaseClass
		why  string
	}{
		{"struck in flight: beyond", withFault(ops(), "pause-client", history.AimHolder, "c1", 100, 3890), BeyondLease,
			"c1's acquire of \"k\" began at 0.000s and returned at 3.900s, after c0's grant"},
		{"a waiter: inside", ops(), InsideLease, "c1 was granted \"k\" at 3.900s while c0's lease on it ran until at least 4.690s"},
		{"another client struck: inside", withFault(ops(), "pause-client", history.AimHolder, "c2", 100, 3890), InsideLease, "c0's lease"},
		{"stopped at its checkpoint, still claiming a lease: inside", atPoint(990, "granted"), InsideLease,
			`c1, stopped at its "granted" checkpoint from 0.100s to 3.890s, still claimed a lease valid for 990ms`},
		{"stopped at its checkpoint, saying its lease was gone: beyond", atPoint(-2900, "granted"), BeyondLease, "c1's acquire"},
		{"stopped elsewhere, claiming a lease: beyond", atPoint(990, ""), BeyondLease, "c1's acquire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ClassifyLease(history.Ops(tc.recs), history.Faults(tc.recs), time.Second, history.Start(tc.recs))
			if got == nil || got.Class != tc.want || !strings.Contains(got.Why, tc.why) {
				t.Fatalf("%+v, want %s with %q", got, tc.want, tc.why)
			}
		})
	}
}

// TestDriftShortensLease: a grant 5 ms before the lease ran out by the
// history's clock is inside the lease when the servers' clocks run at its
// rate, and beyond it when they may run 1% faster (Options.Drift), which
// ends a 1 s lease 10 ms early on the server.
func TestDriftShortensLease(t *testing.T) {
	ok, fail := history.OK, history.Fail
	recs := build(acq(0, 0, 10, ok), incr(0, 10, 2000, ok, 0), rel(0, 2000, 2010, fail),
		acq(1, 900, 995, ok), incr(1, 995, 1100, ok, 0), rel(1, 1100, 1110, ok))
	for _, tc := range []struct {
		drift float64
		want  LeaseClass
	}{{0, InsideLease}, {0.001, InsideLease}, {0.01, BeyondLease}} {
		rep := Check(recs, Options{Timeout: time.Minute, TTL: time.Second, Drift: tc.drift})
		if rep.Lease == nil || rep.Lease.Class != tc.want {
			t.Errorf("drift %v: lease finding %+v, want %s", tc.drift, rep.Lease, tc.want)
		}
	}
}
