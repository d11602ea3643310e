package reports

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
)

// ops builds a history from (client, f, call ms, return ms, outcome,
// error) tuples, in time order.
type hop struct {
	c         int
	f         string
	call, ret int64
	out       history.Type
	err       string
}

func hist(ops ...hop) []history.Record {
	var recs []history.Record
	for i, o := range ops {
		inv := history.Record{Process: o.c, Seq: i + 1, Type: history.Invoke, F: o.f, Key: "lock-0", Time: o.call * 1e6}
		done := inv
		done.Type, done.Time, done.Error = o.out, o.ret*1e6, o.err
		if o.f == history.FIncr {
			done.Value = history.Int64(int64(i))
		}
		recs = append(recs, inv, done)
	}
	return recs
}

func TestTimeline(t *testing.T) {
	fault := []history.Record{
		{Process: history.NemesisProcess, Type: history.FaultStart, F: "fault", Fault: "pause-holder", Target: "c0", Time: 20e6},
		{Process: history.NemesisProcess, Type: history.FaultStop, F: "fault", Fault: "pause-holder", Target: "c0", Time: 220e6},
	}
	cases := []struct {
		name     string
		recs     []history.Record
		red      int // red bars
		episodes int
		rejected int
	}{
		{"one after another", hist(
			hop{0, history.FAcquire, 0, 1, history.OK, ""}, hop{0, history.FRelease, 10, 11, history.OK, ""},
			hop{1, history.FAcquire, 5, 12, history.OK, ""}, hop{1, history.FRelease, 20, 21, history.OK, ""},
		), 0, 0, 0},
		{"paused holder, fenced write rejected", append(hist(
			hop{0, history.FAcquire, 0, 1, history.OK, ""},
			hop{1, history.FAcquire, 5, 110, history.OK, ""}, hop{1, history.FRelease, 130, 131, history.OK, ""},
			hop{2, history.FAcquire, 6, 140, history.OK, ""}, hop{2, history.FRelease, 150, 151, history.OK, ""},
			hop{0, history.FIncr, 2, 221, history.Fail, checker.RejectedError},
			hop{0, history.FRelease, 222, 223, history.Fail, ""},
		), fault...), 4, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTimeline(tc.recs, checker.Check(tc.recs, checker.Options{}))
			if got := len(tl.Overlaps()); got != tc.red {
				t.Errorf("%d red bars, want %d: %+v", got, tc.red, tl.Bars)
			}
			if len(tl.Episodes) != tc.episodes {
				t.Errorf("%d episodes, want %d: %+v", len(tl.Episodes), tc.episodes, tl.Episodes)
			}
			var rejected int
			for _, m := range tl.Marks {
				if m.Kind == MarkRejected && m.Client == 0 {
					rejected++
				}
			}
			if rejected != tc.rejected {
				t.Errorf("%d rejected marks on c0, want %d", rejected, tc.rejected)
			}
			for _, format := range []string{"png", "svg"} {
				data, err := tl.Plot(tc.name).render(format)
				if err != nil || len(data) == 0 {
					t.Fatalf("render %s: %v", format, err)
				}
				if format == "png" {
					if _, err := png.Decode(bytes.NewReader(data)); err != nil {
						t.Fatalf("not a PNG: %v", err)
					}
				}
			}
		})
	}
}
