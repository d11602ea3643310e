package checker

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

// withFault adds one fault's start and stop (ms) to a built history,
// keeping records in time order as a live run writes them.
func withFault(recs []history.Record, name string, aim history.Aim, target string, start, stop int64) []history.Record {
	recs = append(recs,
		history.Record{Process: history.NemesisProcess, Type: history.FaultStart, F: "fault", Fault: name, Aim: aim, Target: target, Time: start * 1e6},
		history.Record{Process: history.NemesisProcess, Type: history.FaultStop, F: "fault", Fault: name, Target: target, Time: stop * 1e6})
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time < recs[j].Time })
	for i := range recs {
		recs[i].Index = i
	}
	return recs
}

func rejected(p int, call, ret int64) op {
	return op{p: p, f: history.FIncr, call: call, ret: ret, outcome: history.Fail, errText: history.RejectedError}
}

func TestEfficacy(t *testing.T) {
	ok, fail, info := history.OK, history.Fail, history.Info
	type fault struct {
		name        string
		aim         history.Aim
		target      string
		start, stop int64
	}
	cases := []struct {
		name  string
		ops   []op
		fault fault
		want  EffectKind
		// reason holds words the reason must contain.
		reason []string
	}{
		{"paused holder outlived by its lease: another client was granted while it held",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 2100, ok, 0), rel(0, 2100, 2110, fail),
				acq(1, 50, 1100, ok), incr(1, 1100, 1150, ok, 0), rel(1, 1150, 1160, ok)},
			fault{"pause-holder", history.AimHolder, "c0", 20, 2020}, Effective, []string{"c1 was granted", "1.100s", "c0 still believed"}},
		{"pause shorter than the lease: the holder kept it",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 600, ok, 0), rel(0, 600, 610, ok), acq(1, 50, 700, ok), rel(1, 700, 710, ok)},
			fault{"pause-holder", history.AimHolder, "c0", 20, 520}, NoEffect, []string{"c0 held", "no other client was granted"}},
		// The aim decides, not the name: a fault the checker never heard of
		// that strikes a holder is judged as one, and a history written
		// before aims were recorded is judged lock-wide.
		{"an unknown fault aimed at the holder is judged by the holder",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 600, ok, 0), rel(0, 600, 610, ok), acq(1, 50, 700, ok), rel(1, 700, 710, ok)},
			fault{"freeze-gc", history.AimHolder, "c0", 20, 520}, NoEffect, []string{"c0 held", "no other client was granted"}},
		{"a fault without an aim is judged lock-wide",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 600, ok, 0), rel(0, 600, 610, ok), acq(1, 50, 700, ok), rel(1, 700, 710, ok)},
			fault{"pause-holder", "", "c0", 20, 520}, NoEffect, []string{"no client was granted a lock another still believed it held"}},
		{"lease ran out under the paused holder, no one took it",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 1600, ok, 0), rel(0, 1600, 1610, fail)},
			fault{"pause-holder", history.AimHolder, "c0", 20, 1520}, Disturbed, []string{"c0's lease on \"k\" ran out", "no other client"}},
		{"a grant after the paused client released is not its lost lease",
			[]op{acq(0, 0, 10, ok), rel(0, 30, 40, ok), acq(1, 35, 300, ok), rel(1, 300, 310, ok)},
			fault{"pause-client", history.AimHolder, "c0", 20, 500}, NoEffect, []string{"c0 held"}},
		{"paused client waiting in acquire was not holding",
			[]op{acq(0, 0, 10, ok), rel(0, 900, 910, ok), acq(1, 50, 2100, fail)},
			fault{"pause-client", history.AimHolder, "c1", 100, 2000}, NoEffect, []string{"c1 was not holding", "waiting in acquire"}},
		{"paused client doing nothing was not holding",
			[]op{acq(0, 0, 10, ok), rel(0, 20, 30, ok), acq(1, 600, 610, ok), rel(1, 620, 630, ok)},
			fault{"pause-client", history.AimHolder, "c1", 100, 500}, NoEffect, []string{"c1 was not holding the lock"}},
		{"killed holder's lease ran out and another client took the lock",
			[]op{acq(0, 0, 10, ok), blind(0, 10), crash(0, 20), acq(1, 50, 1030, ok), rel(1, 1040, 1050, ok)},
			fault{"kill-holder", history.AimHolder, "c0", 25, 2025}, Effective, []string{"c0 was killed holding", "c1 was granted it at 1.030s"}},
		{"killed holder of a lock without expiry: no one else got it",
			[]op{acq(0, 0, 10, ok), blind(0, 10), crash(0, 20), acq(1, 50, 5050, fail), acq(0, 2100, 7100, fail)},
			fault{"kill-holder", history.AimHolder, "c0", 25, 2025}, NoEffect, []string{"c0 was killed holding", "no other client"}},
		{"a crash before an earlier restart is not this kill",
			[]op{acq(0, 0, 10, ok), crash(0, 20), acq(0, 100, 200, fail), acq(1, 300, 310, ok), rel(1, 320, 330, ok)},
			fault{"kill-holder", history.AimHolder, "c0", 250, 400}, NoEffect, []string{"c0 was not holding"}},
		{"skewed client granted while another believed it held the lock",
			[]op{acq(0, 0, 10, ok), rel(0, 500, 510, ok), acq(1, 150, 200, ok), rel(1, 250, 260, ok)},
			fault{"client-clock-skew", history.AimHolder, "c1 +2s ×1", 100, 1100}, Effective,
			[]string{"c1's acquire", "returned ok at 0.200s", "c0 still believed"}},
		{"waiter paused while the lock passed to another client",
			[]op{acq(0, 0, 10, ok), rel(0, 300, 310, ok), acq(1, 50, 1300, info), acq(2, 60, 310, ok), rel(2, 400, 410, ok)},
			fault{"pause-waiter", history.AimWaiter, "c1", 100, 1200}, Effective,
			[]string{"c2 was granted", "c1's acquire was paused", "timed out"}},
		{"paused acquire returned ok while the other holder still held",
			[]op{acq(0, 0, 2100, ok), rel(0, 2200, 2210, fail), acq(1, 1050, 1060, ok), rel(1, 2500, 2510, ok)},
			fault{"pause-acquire", history.AimWaiter, "c0", 10, 2010}, Effective, []string{"c0's acquire", "returned ok at 2.100s", "c1 still believed"}},
		{"paused acquire: another was granted meanwhile and had released by the resume",
			[]op{acq(0, 0, 2100, ok), rel(0, 2200, 2210, fail), acq(1, 1050, 1060, ok), rel(1, 1200, 1210, ok)},
			fault{"pause-acquire", history.AimWaiter, "c0", 10, 2010}, Effective, []string{"c1 was granted", "then returned ok"}},
		{"paused waiter with nothing in flight",
			[]op{acq(1, 0, 10, ok), rel(1, 20, 30, ok)},
			fault{"pause-waiter", history.AimWaiter, "c1", 100, 1200}, NoEffect, []string{"c1 had no acquire in flight"}},
		{"delayed write landed after another client's grant",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 2100, ok, 0), rel(0, 2100, 2110, fail), acq(1, 50, 1100, ok), incr(1, 1100, 1150, ok, 0), rel(1, 1150, 1160, ok)},
			fault{"slow-resource-write", history.AimWrite, "c0:resource", 20, 3020}, Effective, []string{"c0's delayed write completed at 2.100s", "c1 was granted"}},
		{"delayed write refused by fencing still took effect",
			[]op{acq(0, 0, 10, ok), rejected(0, 10, 2100), rel(0, 2100, 2110, fail), acq(1, 50, 1100, ok), rel(1, 1150, 1160, ok)},
			fault{"slow-resource-write", history.AimWrite, "c0:resource", 20, 3020}, Effective, []string{"rejected (stale token)"}},
		{"write given up at the io timeout, no grant before the delay ended",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 520, info, 0), rel(0, 520, 530, ok), acq(0, 540, 550, ok), rel(0, 600, 610, ok)},
			fault{"slow-resource-write", history.AimWrite, "c0:resource", 20, 3020}, NoEffect, []string{"c0 gave up its delayed write at 0.520s"}},
		{"write given up, then another client was granted: it may land late",
			[]op{acq(0, 0, 10, ok), incr(0, 10, 520, info, 0), rel(0, 520, 530, ok), acq(1, 535, 545, ok), rel(1, 600, 610, ok)},
			fault{"slow-resource-write", history.AimWrite, "c0:resource", 20, 3020}, Disturbed, []string{"c0 gave up", "c1 was granted", "may have landed"}},
		{"no write during the delay",
			[]op{acq(0, 0, 10, ok), rel(0, 20, 30, ok)},
			fault{"slow-resource-write", history.AimWrite, "c0:resource", 100, 3100}, NoEffect, []string{"wrote nothing"}},
		{"node fault: overlap within a TTL after the heal",
			[]op{acq(0, 0, 10, ok), rel(0, 1000, 1010, fail), acq(1, 650, 700, ok), rel(1, 1100, 1110, ok)},
			fault{"partition", history.AimLinks, "redis-0", 100, 600}, Effective, []string{"c1 was granted", "0.700s", "c0 still believed"}},
		{"node fault: an overlap more than a TTL after the heal is not its doing",
			[]op{acq(0, 0, 10, ok), rel(0, 2000, 2010, fail), acq(1, 1650, 1700, ok), rel(1, 2100, 2110, ok)},
			fault{"pause-node", history.AimServers, "redis-0", 100, 600}, NoEffect, []string{"no client was granted a lock another still believed it held"}},
		{"node fault: overlap that ended before the fault is not its doing",
			[]op{acq(0, 0, 10, ok), rel(0, 100, 110, fail), acq(1, 50, 60, ok), rel(1, 80, 90, ok)},
			fault{"kill-node", history.AimServers, "redis-0", 200, 600}, NoEffect, []string{"no client was granted a lock another still believed it held"}},
		{"link fault on a client: timed-out ops disturb without a lost lease",
			[]op{acq(0, 0, 10, ok), rel(0, 150, 650, info), acq(1, 700, 710, ok), rel(1, 720, 730, ok)},
			fault{"latency", history.AimLinks, "c0", 100, 600}, Disturbed, []string{"1 client op(s) in flight ended unknown"}},
		{"node fault: a lease ran out under its holder, no one took it",
			[]op{acq(0, 0, 10, ok), rel(0, 300, 310, fail), rejected(1, 350, 360)},
			fault{"clock-bump", history.AimClocks, "redis-0 +2s", 100, 600}, Disturbed,
			[]string{"but 1 release(s) were refused (a lease ran out under its holder); 1 other client op(s) were refused"}},
		{"refused acquires do not disturb: a busy lock refuses them too",
			[]op{acq(0, 0, 10, ok), rel(0, 800, 810, ok), acq(1, 50, 550, fail)},
			fault{"reset-peer", history.AimLinks, "redis-0/clients", 100, 600}, NoEffect, []string{"no client was granted a lock another still believed it held"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := withFault(build(tc.ops...), tc.fault.name, tc.fault.aim, tc.fault.target, tc.fault.start, tc.fault.stop)
			got := Efficacy(recs, time.Second)
			if len(got) != 1 {
				t.Fatalf("%d effects for one fault: %+v", len(got), got)
			}
			e := got[0]
			if e.Kind != tc.want || e.Effective != (tc.want == Effective) {
				t.Fatalf("kind %s (effective %v), want %s: %s", e.Kind, e.Effective, tc.want, e.Reason)
			}
			for _, w := range tc.reason {
				if !strings.Contains(e.Reason, w) {
					t.Errorf("reason %q lacks %q", e.Reason, w)
				}
			}
			if e.Fault != tc.fault.name || e.Target != tc.fault.target || e.Start != tc.fault.start*1e6 || e.End != tc.fault.stop*1e6 {
				t.Errorf("effect names %s on %s [%d, %d], not the fault", e.Fault, e.Target, e.Start, e.End)
			}
		})
	}
}

// TestCheckReportsEfficacy: Check judges every fault, in Faults order, and
// blames a node fault for an overlap within Options.TTL after it only.
func TestCheckReportsEfficacy(t *testing.T) {
	recs := build(acq(0, 0, 10, history.OK), rel(0, 1000, 1010, history.Fail),
		acq(1, 900, 950, history.OK), rel(1, 1100, 1110, history.OK))
	recs = withFault(recs, "pause-node", history.AimServers, "redis-0", 100, 600)
	recs = withFault(recs, "pause-client", history.AimHolder, "c2", 700, 800)
	for _, tc := range []struct {
		ttl  time.Duration
		want EffectKind
	}{{time.Second, Effective}, {100 * time.Millisecond, NoEffect}} {
		rep := Check(recs, Options{TTL: tc.ttl})
		if len(rep.Efficacy) != len(rep.Faults) || len(rep.Efficacy) != 2 {
			t.Fatalf("%d effects for %d faults", len(rep.Efficacy), len(rep.Faults))
		}
		if rep.Efficacy[0].Fault != "pause-node" || rep.Efficacy[0].Kind != tc.want {
			t.Errorf("ttl %s: first effect %+v, want pause-node %s", tc.ttl, rep.Efficacy[0], tc.want)
		}
		if rep.Efficacy[1].Kind != NoEffect {
			t.Errorf("pause-client on an idle client: %+v", rep.Efficacy[1])
		}
	}
}
