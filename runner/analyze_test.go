package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// endedRun is a counter run's history: its start, one client's cycle, its
// end mark and, finalReadAfter past the end, the coordinator's final read
// (none when negative).
func endedRun(finalReadAfter time.Duration) []history.Record {
	const s = int64(time.Second)
	start := 1000 * s
	recs := []history.Record{
		{Process: history.NemesisProcess, Type: history.RunStart, F: "run", Asked: 3 * s, Time: start},
		{Process: 0, Seq: 1, Type: history.Invoke, F: history.FAcquire, Key: "lock-0", Time: start + s/10},
		{Process: 0, Seq: 1, Type: history.OK, F: history.FAcquire, Key: "lock-0", Token: 1, Time: start + s/10 + 1000},
		{Process: 0, Seq: 2, Type: history.Invoke, F: history.FIncr, Key: "lock-0", Time: start + s/5},
		{Process: 0, Seq: 2, Type: history.OK, F: history.FIncr, Key: "lock-0", Value: history.Int64(0), Time: start + s/5 + 1000},
		{Process: 0, Seq: 3, Type: history.Invoke, F: history.FRelease, Key: "lock-0", Time: start + s/4},
		{Process: 0, Seq: 3, Type: history.OK, F: history.FRelease, Key: "lock-0", Time: start + s/4 + 1000},
		{Process: history.NemesisProcess, Type: history.RunEnd, F: "run", Time: start + 3*s},
	}
	if finalReadAfter >= 0 {
		at := start + 3*s + int64(finalReadAfter)
		recs = append(recs,
			history.Record{Process: history.NemesisProcess, Seq: 1, Type: history.Invoke, F: history.FRead, Key: "lock-0", Time: at - 1000},
			history.Record{Process: history.NemesisProcess, Seq: 1, Type: history.OK, F: history.FRead, Key: "lock-0", Value: history.Int64(1), Time: at})
	}
	for i := range recs {
		recs[i].Index = i
	}
	return recs
}

// TestValidHistoryBoundsTheEnd: the records after the run-end mark (the
// final read, which no later coordinator record bounds) are timed within
// the quiet end and final read the run's settings allow; one edited to
// long after (485 s, which made a 3 s run read as 0.1 acquisitions/s) is
// refused naming its line.
func TestValidHistoryBoundsTheEnd(t *testing.T) {
	cfg := scenario.Defaults()
	cfg.Clients, cfg.Keys = 1, 1
	for _, tc := range []struct {
		after time.Duration
		want  string // "" when valid
	}{
		{10 * time.Millisecond, ""},
		{stopGrace(cfg) + finalReadTimeout, ""}, // the slowest quiet end and read
		{485 * time.Second, "history line 9: time"},
		{afterEnd(cfg) + time.Second, "after the run-end mark (line 8)"},
	} {
		err := validHistory(endedRun(tc.after), cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("final read %v after the end: %v", tc.after, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("final read %v after the end: %v, want an error saying %q", tc.after, err, tc.want)
		}
	}
}

// TestNoFinalReadIsUnknown: a counter run whose coordinator died between
// its end mark and its final read (a SIGKILL then) never counted its lost
// updates: the verdict is unknown, not valid, and the health says the
// run was cut short before its final read. With the read, it is valid.
func TestNoFinalReadIsUnknown(t *testing.T) {
	counter, err := workloads.Lookup("counter")
	if err != nil {
		t.Fatal(err)
	}
	cfg := scenario.Defaults()
	cfg.Clients, cfg.Keys, cfg.Faults = 1, 1, []string{faults.None}
	for _, tc := range []struct {
		read    time.Duration // the final read after the end; negative: none
		verdict checker.Verdict
	}{
		{10 * time.Millisecond, checker.Valid},
		{-1, checker.Unknown},
	} {
		dir := t.TempDir()
		var data []byte
		for _, r := range endedRun(tc.read) {
			data = append(history.AppendJSON(data, &r), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Recheck(dir, Resolved{Config: cfg, Workload: counter})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != tc.verdict {
			t.Errorf("final read %v: verdict %s, want %s (notes %q)", tc.read, res.Verdict, tc.verdict, res.Notes)
		}
		if cut := res.Health != nil && res.Health.NoFinalRead; cut != (tc.read < 0) {
			t.Errorf("final read %v: health says cut short before the read: %v", tc.read, cut)
		}
	}
}
