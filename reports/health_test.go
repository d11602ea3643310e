package reports

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
)

const sec = int64(1e9)

// healthRun builds a history of an 8 s run: two clients with ops from
// clientsAt to 8.5 s, the given fault events, and the run-end mark at end
// (none when end is 0) with lag p99 lagP99.
func healthRun(clientsAt, end, lagP99 int64, faults ...history.Record) []history.Record {
	recs := []history.Record{{Process: history.NemesisProcess, Type: history.RunStart, Asked: 8 * sec, Time: 1 * sec}}
	for c := range 2 {
		recs = append(recs,
			history.Record{Process: c, Seq: 1, Type: history.Invoke, F: history.FAcquire, Time: 1*sec + clientsAt},
			history.Record{Process: c, Seq: 1, Type: history.OK, F: history.FAcquire, Time: 9*sec + sec/2})
	}
	recs = append(recs, faults...)
	if end != 0 {
		recs = append(recs, history.Record{Process: history.NemesisProcess, Type: history.RunEnd, Time: end,
			Lag: &history.Lag{Ticks: 160, P99: lagP99, Max: lagP99}})
	}
	return recs
}

// cutRun builds the history of an 8 s run whose coordinator was killed
// at into the run: two clients' ops up to then, and no run-end mark.
func cutRun(at int64) []history.Record {
	recs := []history.Record{{Process: history.NemesisProcess, Type: history.RunStart, Asked: 8 * sec, Time: 1 * sec}}
	for c := range 2 {
		recs = append(recs,
			history.Record{Process: c, Seq: 1, Type: history.Invoke, F: history.FAcquire, Time: 1*sec + sec/100},
			history.Record{Process: c, Seq: 1, Type: history.OK, F: history.FAcquire, Time: 1*sec + at})
	}
	return recs
}

// strike is a fault start and stop, asked to last asked (0: own hold).
func strike(fault string, at, lasted, asked int64) []history.Record {
	return []history.Record{
		{Process: history.NemesisProcess, Type: history.FaultStart, Fault: fault, Target: "c1", Time: at, Asked: asked},
		{Process: history.NemesisProcess, Type: history.FaultStop, Fault: fault, Target: "c1", Time: at + lasted},
	}
}

// restart is a strike of fault on target asked to last 2 s, whose restart
// began after healAt and took took.
func restart(fault, target string, at, healAt, took int64) []history.Record {
	return []history.Record{
		{Process: history.NemesisProcess, Type: history.FaultStart, Fault: fault, Target: target, Time: at, Asked: 2 * sec},
		{Process: history.NemesisProcess, Type: history.FaultStop, Fault: fault, Target: target, Time: at + healAt + took, HealStart: at + healAt},
	}
}

func TestHealth(t *testing.T) {
	ms := sec / 1000
	for _, tc := range []struct {
		name    string
		recs    []history.Record
		faults  []string
		verdict checker.Verdict
		want    checker.Verdict
		// notes are substrings the notes must hold, in order; none means no notes.
		notes []string
	}{
		{name: "healthy", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms, strike("pause-holder", 3*sec, 2*sec+ms, 2*sec)...),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Valid},
		{name: "saturated coordinator", recs: healthRun(10*ms, 9*sec+5*ms, 150*ms, strike("pause-holder", 3*sec, 2*sec, 2*sec)...),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Valid,
			notes: []string{"timing not honoured: the coordinator woke up to 150ms late"}},
		{name: "one strike far too long", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms,
			append(strike("pause-holder", 2*sec, 2*sec, 2*sec), strike("pause-holder", 5*sec, 3100*ms, 2*sec)...)...),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Valid,
			notes: []string{"1 of 2 fault strike(s) lasted outside"}},
		{name: "every strike far off: valid becomes unknown", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms, strike("pause-holder", 3*sec, 900*ms, 2*sec)...),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Unknown,
			notes: []string{"1 of 1 fault strike(s)", "verdict unknown, not valid: every one of 1 fault strike(s)"}},
		{name: "invalid stays invalid", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms, strike("pause-holder", 3*sec, 900*ms, 2*sec)...),
			faults: []string{"pause-holder"}, verdict: checker.Invalid, want: checker.Invalid,
			notes: []string{"1 of 1 fault strike(s)", "faults not delivered as asked: every one of 1 fault strike(s)"}},
		{name: "fault asked, none started", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Unknown,
			notes: []string{"verdict unknown, not valid: fault pause-holder was asked for and never started"}},
		{name: "fault asked, none started, verdict already unknown", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms),
			faults: []string{"pause-holder"}, verdict: checker.Unknown, want: checker.Unknown,
			notes: []string{"faults not delivered as asked: fault pause-holder was asked for and never started"}},
		{name: "the control run starts nothing and is healthy", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms),
			faults: []string{"none"}, verdict: checker.Valid, want: checker.Valid},
		{name: "a slow restart is the server's, not the strike's", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms, restart("kill-node", "redis-0", 3*sec, 2*sec, 3*sec)...),
			faults: []string{"kill-node"}, verdict: checker.Valid, want: checker.Valid},
		{name: "a restart begun late is", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms, restart("kill-node", "redis-0", 3*sec, 3100*ms, 2*sec)...),
			faults: []string{"kill-node"}, verdict: checker.Valid, want: checker.Unknown,
			notes: []string{"1 of 1 fault strike(s) lasted outside 0.5–1.5× the length asked (1.55–1.55×)", "verdict unknown"}},
		{name: "own hold is not compared", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms, strike("failover", 3*sec, 5*sec, 0)...),
			faults: []string{"failover"}, verdict: checker.Valid, want: checker.Valid},
		{name: "strike cut by the run's end is compared with what was left", recs: healthRun(10*ms, 9*sec+5*ms, 2*ms, strike("pause-holder", 8*sec, sec+5*ms, 2*sec)...),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Valid},
		{name: "clients began late", recs: healthRun(2*sec, 9*sec+5*ms, 2*ms),
			verdict: checker.Valid, want: checker.Valid,
			notes: []string{"the last client began 2.00 s into the 8.00 s run"}},
		{name: "clients ran short", recs: healthRun(5*sec, 9*sec+5*ms, 2*ms),
			verdict: checker.Valid, want: checker.Valid,
			notes: []string{"the clients ran for 3.50 s of the 8.00 s asked", "the last client began 5.00 s"}},
		{name: "final heal late", recs: healthRun(10*ms, 12*sec, 2*ms),
			verdict: checker.Valid, want: checker.Valid,
			notes: []string{"the final heal came 3.00 s after the run's end"}},
		{name: "unfinished run judges no delivery", recs: healthRun(10*ms, 0, 0),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Valid},
		{name: "killed 0.8 s into the run: valid becomes unknown", recs: cutRun(800 * ms),
			faults: []string{"pause-holder"}, verdict: checker.Valid, want: checker.Unknown,
			notes: []string{"verdict unknown, not valid: the run was cut short at 0.80 s of 8.00 s"}},
		{name: "killed 0.8 s into the run: invalid stays invalid", recs: cutRun(800 * ms),
			verdict: checker.Invalid, want: checker.Invalid,
			notes: []string{"the run was cut short at 0.80 s of 8.00 s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := MeasureHealth(tc.recs, tc.faults, false)
			if h == nil {
				t.Fatal("no health for a history with a run-start mark")
			}
			got, notes := h.Judge(tc.verdict)
			if got != tc.want {
				t.Errorf("verdict %s, want %s (notes %q)", got, tc.want, notes)
			}
			if len(notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %d holding %q", notes, len(tc.notes), tc.notes)
			}
			for i, want := range tc.notes {
				if !strings.Contains(notes[i], want) {
					t.Errorf("note %d %q does not say %q", i, notes[i], want)
				}
			}
			state := strings.Contains(h.line(), "TIMING NOT HONOURED") || strings.Contains(h.line(), "CUT SHORT: run asked 8.00 s, cut short at")
			if state != (len(tc.notes) > 0) {
				t.Errorf("health line %q disagrees with the notes %q", h.line(), notes)
			}
		})
	}
}

// A history from a build without run marks has no health, and judging
// it changes nothing.
func TestHealthOfOldHistory(t *testing.T) {
	h := MeasureHealth(strike("pause-holder", sec, sec, sec), []string{"pause-holder"}, false)
	if h != nil {
		t.Fatalf("health %+v for a history without a run-start mark", h)
	}
	if v, notes := h.Judge(checker.Valid); v != checker.Valid || notes != nil {
		t.Errorf("nil health judged %s %q", v, notes)
	}
}

// TestHealthRestartTime: the time a restart took is reported beside the
// strikes, and on the health line, as what it was: a server serving
// again, or a killed client's worker respawned (under a millisecond,
// which "0.00 s" would hide).
func TestHealthRestartTime(t *testing.T) {
	for _, tc := range []struct {
		fault, target      string
		took               int64
		server, client, in string
		not                string
	}{
		{"kill-node", "redis-0", 3 * sec, "3", "0", "restarts serving within 3.00 s", "clients restarted"},
		{"kill-holder", "c1", 900_000, "0", "0.0009", "killed clients restarted within 0.9 ms", "restarts serving"},
	} {
		h := MeasureHealth(healthRun(10*sec/1000, 9*sec+5*sec/1000, 2*sec/1000, restart(tc.fault, tc.target, 3*sec, 2*sec, tc.took)...), []string{tc.fault}, false)
		if got := fmt.Sprint(h.HealTookMaxS, " ", h.ClientRestartMaxS); got != tc.server+" "+tc.client || h.MaxRatio != 1 {
			t.Errorf("%s: server and client restarts took %s s at ratio %v, want %s %s at 1", tc.fault, got, h.MaxRatio, tc.server, tc.client)
		}
		if line := h.line(); !strings.Contains(line, tc.in) || strings.Contains(line, tc.not) {
			t.Errorf("%s: health line %q does not say %q alone", tc.fault, line, tc.in)
		}
	}
}
