package live

import (
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

// Records of a short counter run, as the coordinator writes them; times in
// seconds from an origin of 100 s.
func at(s float64) int64 { return int64((100 + s) * 1e9) }

func op(process int, typ history.Type, f string, s float64) history.Record {
	return history.Record{Process: process, Type: typ, F: f, Key: "lock-0", Time: at(s)}
}

func incr(process int, typ history.Type, value int64, s float64) history.Record {
	r := op(process, typ, history.FIncr, s)
	r.Value = history.Int64(value)
	return r
}

func fault(typ history.Type, target string, s float64) history.Record {
	return history.Record{Process: history.NemesisProcess, Type: typ, F: "fault", Fault: "pause-holder", Target: target, Time: at(s)}
}

var (
	runStart = history.Record{Process: history.NemesisProcess, Type: history.RunStart, F: "run", Asked: int64(15 * time.Second), Time: at(0)}
	runEnd   = history.Record{Process: history.NemesisProcess, Type: history.RunEnd, F: "run", Time: at(15)}
	// One cycle of c0 and c1 each; c1 read what c0 read: one lost update.
	cycles = []history.Record{
		op(0, history.Invoke, history.FAcquire, 0.1), op(0, history.OK, history.FAcquire, 0.2),
		incr(0, history.Invoke, 0, 0.3), incr(0, history.OK, 7, 0.4),
		fault(history.FaultStart, "c0", 0.5),
		op(1, history.Invoke, history.FAcquire, 0.6), op(1, history.OK, history.FAcquire, 1.6),
		incr(1, history.OK, 7, 1.7),
		op(0, history.Invoke, history.FRelease, 2.6), op(0, history.Fail, history.FRelease, 2.7),
	}
	finalRead = []history.Record{
		{Process: history.NemesisProcess, Seq: 1, Type: history.Invoke, F: history.FRead, Key: "lock-0", Time: at(16)},
		{Process: history.NemesisProcess, Seq: 1, Type: history.OK, F: history.FRead, Key: "lock-0", Value: history.Int64(8), Time: at(16.1)},
	}
)

func concat(parts ...[]history.Record) []history.Record {
	var out []history.Record
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestLine: the status line says what the history shows and nothing it
// does not: no elapsed time before the clients begin, lost updates only
// once a critical section was acknowledged, faults while they are active.
func TestLine(t *testing.T) {
	cases := []struct {
		name  string
		recs  []history.Record
		phase Phase // "": the phase the history shows
		now   float64
		want  string
	}{
		{"nothing yet", nil, "", 0, "starting servers"},
		{"clients began", []history.Record{runStart}, "", 0.05, "running 0.1s/15s: 0 ops, 0 acquisitions"},
		{"acquired, no section yet", concat([]history.Record{runStart}, cycles[:2]), "", 0.25,
			"running 0.2s/15s: 1 ops, 1 acquisitions"},
		{"fault active", concat([]history.Record{runStart}, cycles[:5]), "", 0.55,
			"running 0.6s/15s: 2 ops, 1 acquisitions, 0 lost update(s) so far; 0 of 1 strike(s) hit; fault active: pause-holder on c0"},
		{"lost update", concat([]history.Record{runStart}, cycles), "", 3,
			"running 3.0s/15s: 5 ops, 2 acquisitions, 1 lost update(s) so far; 1 of 1 strike(s) hit; fault active: pause-holder on c0"},
		{"healed", concat([]history.Record{runStart}, cycles, []history.Record{fault(history.FaultStop, "c0", 2.5)}), "", 3,
			"running 3.0s/15s: 5 ops, 2 acquisitions, 1 lost update(s) so far; 1 of 1 strike(s) hit"},
		{"duration over", concat([]history.Record{runStart}, cycles), "", 15.2,
			"healing 15.2s/15s: 5 ops, 2 acquisitions, 1 lost update(s) so far; 1 of 1 strike(s) hit; fault active: pause-holder on c0"},
		{"run end seen", concat([]history.Record{runStart}, cycles, []history.Record{runEnd}), "", 15.5,
			"finishing (final read, check, report) 15.5s/15s: 5 ops, 2 acquisitions, 1 lost update(s) so far; 1 of 1 strike(s) hit; fault active: pause-holder on c0"},
		{"the coordinator's final read is no client op", concat([]history.Record{runStart}, cycles, []history.Record{runEnd}, finalRead), Checking, 16.2,
			"checking 16.2s/15s: 5 ops, 2 acquisitions, 1 lost update(s) so far; 1 of 1 strike(s) hit; fault active: pause-holder on c0"},
		{"clock behind the history", []history.Record{runStart}, Running, -1, "running 0.0s/15s: 0 ops, 0 acquisitions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tally Tally
			tally.Add(tc.recs...)
			p := tc.phase
			if p == "" {
				p = tally.Phase(at(tc.now))
			}
			if got := tally.Line(p, at(tc.now)); got != tc.want {
				t.Errorf("Line:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestEffective: a strike hits when, while it lasts or within Grace after
// its heal, a client is granted a key another still believes it holds;
// a strike on one client only when that client is one of the two; a
// release or a crash ends the belief.
func TestEffective(t *testing.T) {
	acq := func(c int, s float64) []history.Record {
		return []history.Record{op(c, history.Invoke, history.FAcquire, s), op(c, history.OK, history.FAcquire, s+0.01)}
	}
	aimed := func(typ history.Type, target string, aim history.Aim, s float64) history.Record {
		r := fault(typ, target, s)
		r.Aim = aim
		return r
	}
	lockWide := []history.Record{fault(history.FaultStart, "n1", 0.5), fault(history.FaultStop, "n1", 1.5)}
	cases := []struct {
		name string
		recs []history.Record
		want int
	}{
		{"double grant during the strike", concat(acq(0, 0.1), lockWide[:1], acq(1, 1), lockWide[1:]), 1},
		{"released before the next grant", concat(acq(0, 0.1), lockWide[:1], []history.Record{op(0, history.Invoke, history.FRelease, 0.8)}, acq(1, 1), lockWide[1:]), 0},
		{"crashed before the next grant", concat(acq(0, 0.1), lockWide[:1], []history.Record{op(0, history.Invoke, history.FCrash, 0.8)}, acq(1, 1), lockWide[1:]), 0},
		{"double grant within the grace after the heal", concat(acq(0, 0.1), lockWide, acq(1, 2)), 1},
		{"double grant after the grace", concat(acq(0, 0.1), lockWide, acq(1, 3)), 0},
		{"double grant before the strike", concat(acq(0, 0.1), acq(1, 0.2), lockWide), 0},
		{"the paused holder is one of the two", concat(acq(0, 0.1), []history.Record{aimed(history.FaultStart, "c0", history.AimHolder, 0.5)}, acq(1, 1)), 1},
		{"a strike on a third client", concat(acq(0, 0.1), []history.Record{aimed(history.FaultStart, "c2", history.AimHolder, 0.5)}, acq(1, 1)), 0},
		{"one double grant, two strikes active", concat(acq(0, 0.1), lockWide[:1], []history.Record{aimed(history.FaultStart, "c1", history.AimWaiter, 0.6)}, acq(1, 1)), 2},
		{"a strike counts once", concat(acq(0, 0.1), lockWide[:1], acq(1, 1), acq(2, 1.2)), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tally := Tally{Grace: time.Second}
			tally.Add(tc.recs...)
			if tally.Effective != tc.want {
				t.Errorf("%d effective strike(s), want %d", tally.Effective, tc.want)
			}
		})
	}
}

// TestLostMatchesTheChecker: two sections reading the same value are one
// lost update; three are two; the same value on another key is none.
func TestLostMatchesTheChecker(t *testing.T) {
	other := incr(2, history.OK, 7, 1.8)
	other.Key = "lock-1"
	cases := []struct {
		name string
		recs []history.Record
		want int
	}{
		{"distinct values", []history.Record{incr(0, history.OK, 1, 1), incr(1, history.OK, 2, 2)}, 0},
		{"pair", []history.Record{incr(0, history.OK, 7, 1), incr(1, history.OK, 7, 2)}, 1},
		{"three", []history.Record{incr(0, history.OK, 7, 1), incr(1, history.OK, 7, 2), incr(2, history.OK, 7, 3)}, 2},
		{"other key", []history.Record{incr(0, history.OK, 7, 1), other}, 0},
		// A section of unknown outcome or a rejected write proves nothing.
		{"info and fail", []history.Record{incr(0, history.OK, 7, 1), incr(1, history.Info, 7, 2), incr(2, history.Fail, 7, 3)}, 0},
	}
	for _, tc := range cases {
		var tally Tally
		tally.Add(tc.recs...)
		if tally.Lost != tc.want {
			t.Errorf("%s: %d lost, want %d", tc.name, tally.Lost, tc.want)
		}
	}
}

// TestLostInBoundedMemory: a long run's tally remembers the values of
// about recentValues sections a key, not of all of them, and still counts
// a stale write within them.
func TestLostInBoundedMemory(t *testing.T) {
	var tally Tally
	const sections = 20 * recentValues
	for v := int64(1); v <= sections; v++ {
		tally.Add(incr(int(v%5), history.OK, v, float64(v)/1000))
	}
	tally.Add(incr(1, history.OK, sections-recentValues/2, sections/1000+1)) // a stale holder's write
	if tally.Lost != 1 {
		t.Errorf("%d lost, want 1", tally.Lost)
	}
	if n := len(tally.written["lock-0"].seen); n > 2*recentValues+1 {
		t.Errorf("the tally remembers %d values of %d sections, want at most %d", n, sections, 2*recentValues+1)
	}
}

// TestModeFlag: --progress takes the four modes and refuses anything else;
// auto is plain on a pipe.
func TestModeFlag(t *testing.T) {
	for _, s := range []string{"auto", "tty", "plain", "none"} {
		var m Mode
		if err := m.Set(s); err != nil || m.String() != s {
			t.Errorf("Set(%q): %v, %q", s, err, m)
		}
	}
	var m Mode
	if err := m.Set("quiet"); err == nil || !strings.Contains(err.Error(), "auto tty plain none") {
		t.Errorf("Set(quiet): %v", err)
	}
	if got := Auto.Resolve(&strings.Builder{}); got != Plain {
		t.Errorf("auto on a buffer: %s, want plain", got)
	}
}
