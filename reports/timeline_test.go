package reports

import (
	"bytes"
	"fmt"
	"image/png"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
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
			hop{0, history.FIncr, 2, 221, history.Fail, history.RejectedError},
			hop{0, history.FRelease, 222, 223, history.Fail, ""},
		), fault...), 4, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTimeline(tc.recs)
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

// TestLostMarks: the timeline marks each write of a value already
// written, and the marks number the resource check's lost updates: a
// paused writer that wrote 1 after 3 was written, and those who then
// wrote 2 and 3 again.
func TestLostMarks(t *testing.T) {
	var recs []history.Record
	write := func(c int, read, call, ret int64) {
		inv := history.Record{Process: c, Seq: len(recs) + 1, Type: history.Invoke, F: history.FIncr, Key: "lock-0", Time: call * 1e6}
		done := inv
		done.Type, done.Time, done.Value = history.OK, ret*1e6, history.Int64(read)
		recs = append(recs, inv, done)
	}
	write(0, 0, 0, 10)
	write(1, 1, 11, 20)
	write(2, 2, 21, 30)
	write(3, 0, 1, 40) // read 0 before the pause, wrote 1 over 3
	write(1, 1, 41, 50)
	write(2, 1, 42, 60) // read 1 as c1 did
	write(3, 2, 61, 70)
	final := history.Record{Process: -1, Seq: 1, Type: history.Invoke, F: history.FRead, Key: "lock-0", Time: 80e6}
	done := final
	done.Type, done.Time, done.Value = history.OK, 81e6, history.Int64(3)
	recs = append(recs, final, done)

	var got []int
	for _, m := range NewTimeline(recs).Marks {
		if m.Kind == MarkLost {
			got = append(got, m.Client)
		}
	}
	if want := []int{3, 1, 2, 3}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lost-update marks on clients %v, want %v", got, want)
	}
	if lost := checker.Check(recs, checker.Options{}).Stats.Lost; len(got) != lost || lost != 4 {
		t.Errorf("%d lost-update marks, the resource check counts %d lost, want 4 both", len(got), lost)
	}
}

// TestPlotText: every word the report's figures draw is in the one
// sans-serif face, at least 11 px high as the page shows it.
func TestPlotText(t *testing.T) {
	recs := storedHistory(t)
	for _, p := range plots(Results{Scenario: "redis-single_counter_pause-holder"}, recs, growingSamples(recs[0].Time, 10)) {
		var rec recorder.Canvas
		w, h := p.fig.size()
		p.fig.draw(draw.NewCanvas(&rec, w, h))
		var words int
		for _, a := range rec.Actions {
			s, ok := a.(*recorder.FillString)
			if !ok {
				continue
			}
			words++
			if s.Font.Typeface != plotFace.Typeface || s.Font.Variant != plotFace.Variant {
				t.Errorf("%s: %q in %s %s, want %s %s", p.ID, s.String, s.Font.Typeface, s.Font.Variant, plotFace.Typeface, plotFace.Variant)
			}
			if size := float64(s.Size / px(1)); size < 11 {
				t.Errorf("%s: %q at %.1f px, want at least 11", p.ID, s.String, size)
			}
		}
		if words < 10 {
			t.Errorf("%s: %d strings drawn, want a title, labels, ticks and a legend", p.ID, words)
		}
	}
}

// storedHistory reads the history of the stored 60 s run.
func storedHistory(t *testing.T) []history.Record {
	t.Helper()
	return historytest.ReadGz(t, filepath.Join("testdata", "run-60s-8c", HistoryFile+".gz"))
}
