package reports

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
)

var posInf, negInf = math.Inf(1), math.Inf(-1)

// Timeline is what the holder-timeline plot draws, kept apart from the
// drawing so that tests can ask what is red without reading pixels.
type Timeline struct {
	// Start is the origin of the x axis (the history's first record).
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Clients are the rows, top to bottom.
	Clients []int    `json:"clients"`
	Keys    []string `json:"keys"`
	// Bars are believed-holder intervals. A bar with Overlap set is a
	// stretch in which another client believed it held the same key too;
	// it is drawn in red over the hold it belongs to.
	Bars []Bar `json:"bars"`
	// Episodes are the spans of overlapping holds: a paused holder's
	// long hold and the holds of those who acquired meanwhile make one.
	Episodes []Bar           `json:"episodes,omitempty"`
	Marks    []Mark          `json:"marks,omitempty"`
	Faults   []history.Fault `json:"faults,omitempty"`
}

// Bar is one stretch of a client believing it held a key.
type Bar struct {
	Client  int    `json:"client"`
	Key     string `json:"key"`
	From    int64  `json:"from"`
	To      int64  `json:"to"`
	Token   int64  `json:"token,omitempty"`
	Overlap bool   `json:"overlap,omitempty"`
}

// Mark is a write worth pointing at on a client's row.
type Mark struct {
	Client int    `json:"client"`
	Time   int64  `json:"time"`
	Kind   string `json:"kind"`
	Index  int    `json:"index"` // the invoke record of the op
}

// Kinds of marks.
const (
	MarkRejected = "stale write rejected"
	// MarkLost is an acknowledged write of a value another write had
	// already written: one update lost.
	MarkLost = "lost update: wrote a value already written"
)

// Overlaps returns the red bars: the stretches with two believed holders.
func (t Timeline) Overlaps() []Bar {
	var out []Bar
	for _, b := range t.Bars {
		if b.Overlap {
			out = append(out, b)
		}
	}
	return out
}

// NewTimeline builds the holder timeline of a history.
func NewTimeline(recs []history.Record) Timeline {
	return newTimeline(recs, history.Ops(recs))
}

// newTimeline is NewTimeline with the history's ops already paired.
func newTimeline(recs []history.Record, ops []history.Op) Timeline {
	t := Timeline{Start: history.Start(recs), Faults: history.Faults(recs)}
	for _, r := range recs {
		t.End = max(t.End, r.Time)
	}
	seen := map[int]bool{}
	for _, op := range ops {
		if op.Process >= 0 && !seen[op.Process] {
			seen[op.Process] = true
			t.Clients = append(t.Clients, op.Process)
		}
	}
	sort.Ints(t.Clients)

	byKey := checker.Holds(ops)
	for k := range byKey {
		t.Keys = append(t.Keys, k)
	}
	sort.Strings(t.Keys)
	for _, k := range t.Keys {
		for _, h := range byKey[k] {
			t.Bars = append(t.Bars, Bar{Client: h.Process, Key: k, From: h.From, To: h.To, Token: h.Token})
		}
		contested := map[int]bool{} // which holds have a red piece
		pieces, of := checker.Contested(byKey[k])
		for n, h := range pieces {
			t.Bars = append(t.Bars, Bar{Client: h.Process, Key: k, From: h.From, To: h.To, Token: h.Token, Overlap: true})
			contested[of[n]] = true
		}
		t.Episodes = append(t.Episodes, episodes(k, byKey[k], contested)...)
	}

	for _, op := range ops {
		if op.F == history.FIncr && op.Outcome == history.Fail && op.Error == history.RejectedError {
			t.Marks = append(t.Marks, Mark{Client: op.Process, Time: op.Completed, Kind: MarkRejected, Index: op.InvokeIndex})
		}
	}
	t.Marks = append(t.Marks, lostMarks(ops)...)
	return t
}

// lostMarks marks, for each value written to a key more than once, every
// write of it but the first to return: each is one lost update. Every
// increment writes the value it read plus one, so the values written run
// from 1 to the highest, and the marks number acknowledged increments
// minus that highest value: the resource check's lost count whenever the
// final value is the highest written, however the writes interleaved.
func lostMarks(ops []history.Op) []Mark {
	type written struct {
		key   string
		value int64
	}
	byValue := map[written][]history.Op{}
	for _, op := range ops {
		if op.F == history.FIncr && op.Outcome == history.OK && op.Value != nil {
			w := written{op.Key, *op.Value + 1}
			byValue[w] = append(byValue[w], op)
		}
	}
	var marks []Mark
	for _, writes := range byValue {
		sort.Slice(writes, func(i, j int) bool { return writes[i].Completed < writes[j].Completed })
		for _, op := range writes[1:] {
			marks = append(marks, Mark{Client: op.Process, Time: op.Completed, Kind: MarkLost, Index: op.InvokeIndex})
		}
	}
	sort.Slice(marks, func(i, j int) bool { return marks[i].Time < marks[j].Time })
	return marks
}

// episodes merges the contested holds of one key into spans.
func episodes(key string, hs []checker.Hold, contested map[int]bool) []Bar {
	var spans []Bar
	for i, h := range hs {
		if contested[i] {
			spans = append(spans, Bar{Client: -1, Key: key, From: h.From, To: h.To, Overlap: true})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].From < spans[j].From })
	var out []Bar
	for _, s := range spans {
		if n := len(out); n > 0 && s.From < out[n-1].To {
			out[n-1].To = max(out[n-1].To, s.To)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Plot draws the timeline: a row per client, a bar per believed hold,
// red where holds of different clients overlap, faults shaded and named,
// marked writes on top.
func (t Timeline) Plot(title string) *figure {
	n := len(t.Clients)
	f := newFigure(title, "client", 1100, 110+32*float64(max(n, 1)), t.Start)
	f.p.X.Max = f.secs(t.End)
	row := map[int]float64{}
	names := make([]string, n)
	for i, c := range t.Clients {
		// Client 0 on top, as in a list.
		row[c] = float64(n - 1 - i)
		names[n-1-i] = fmt.Sprintf("c%d", c)
	}
	if n > 0 {
		f.p.NominalY(names...)
	}
	f.faults(t.Faults)

	keyIdx := map[string]int{}
	for i, k := range t.Keys {
		keyIdx[k] = i
	}
	holds := make([]*rects, len(keyColors))
	red := &rects{color: colorOverlap}
	for _, b := range t.Bars {
		y, ok := row[b.Client]
		if !ok {
			continue
		}
		r := rect{f.secs(b.From), f.secs(b.To), y - 0.3, y + 0.3}
		if b.Overlap {
			red.rs = append(red.rs, r)
			continue
		}
		i := keyIdx[b.Key] % len(keyColors)
		if holds[i] == nil {
			holds[i] = &rects{color: keyColors[i]}
		}
		holds[i].rs = append(holds[i].rs, r)
	}
	for i, h := range holds {
		if h == nil {
			continue
		}
		f.p.Add(h)
		name := "believed it held the lock"
		if len(t.Keys) > 1 {
			name = "held " + t.Keys[i]
			if len(t.Keys) > len(keyColors) && i == len(keyColors)-1 {
				name = "held other keys"
			}
		}
		f.addLegend(name, h)
	}
	if len(red.rs) > 0 {
		f.p.Add(red)
	}
	// The legend always explains red, so that its absence says something.
	f.addLegend("another client believed it held the same lock", red)

	glyphs := map[string]draw.GlyphStyle{
		MarkRejected: {Color: colorMark, Radius: px(5), Shape: draw.CrossGlyph{}},
		MarkLost:     {Color: colorLost, Radius: px(5), Shape: draw.PyramidGlyph{}},
	}
	for _, kind := range []string{MarkLost, MarkRejected} {
		var xys plotter.XYs
		for _, m := range t.Marks {
			if y, ok := row[m.Client]; ok && m.Kind == kind {
				xys = append(xys, plotter.XY{X: f.secs(m.Time), Y: y + 0.42})
			}
		}
		if len(xys) == 0 {
			continue
		}
		s, _ := plotter.NewScatter(xys) // cannot fail: finite values
		s.GlyphStyle = glyphs[kind]
		f.p.Add(s)
		f.addLegend(fmt.Sprintf("%s (%d)", kind, len(xys)), s)
	}
	// Headroom above the top row for the fault names.
	f.p.Y.Min, f.p.Y.Max = -0.6, float64(n)-0.4+0.7
	f.p.Y.Padding, f.p.X.Padding = 0, 0
	f.p.Y.Tick.Label.Font = font.From(plotFace, px(plotLabel))
	return f
}
