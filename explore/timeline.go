package explore

import (
	"fmt"
	"slices"

	"github.com/locktest/locktest/checker"
)

// Timeline is explore.html's picture of the search: a row per fault (a
// pair has its own), each trial a bar over the search time it took,
// coloured by its verdict, with the share of its strikes that took effect
// as the height of a darker band. It is drawn as inline SVG by the page's
// template, so every text in it is escaped like the rest of the page.
type Timeline struct {
	Width, Height int
	Rows          []TimelineRow
	Ticks         []TimelineTick
	Axis          int // y of the time axis
}

// TimelineRow is one fault's (or pair's) trials.
type TimelineRow struct {
	Fault string
	Y     int
	Bars  []TimelineBar
}

// TimelineBar is one trial.
type TimelineBar struct {
	X, Y, W int
	Class   string // the verdict: valid, invalid, unknown
	// EffectH is the height of the band that says how many strikes took
	// effect (the row's height when all did).
	EffectH, EffectY int
	Title            string
}

// TimelineTick marks search time on the axis.
type TimelineTick struct {
	X     int
	Label string
}

const (
	tlLabel = 230 // px for the fault names
	tlPlot  = 700 // px for the search time
	tlRow   = 18
)

// timeline lays the trials out along the search time each took (their
// walls back to back: draws refused before running took none).
func timeline(trials []Trial) *Timeline {
	if len(trials) == 0 {
		return nil
	}
	var total float64
	for _, t := range trials {
		total += t.Wall
	}
	if total <= 0 {
		return nil
	}
	scale := tlPlot / total
	var names []string
	for _, t := range trials {
		if n := t.Knobs.item(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	tl := &Timeline{Width: tlLabel + tlPlot + 20, Axis: len(names)*tlRow + 4}
	tl.Height = tl.Axis + 22
	for i, n := range names {
		tl.Rows = append(tl.Rows, TimelineRow{Fault: n, Y: i * tlRow})
	}
	var at float64
	for _, t := range trials {
		row := &tl.Rows[slices.Index(names, t.Knobs.item())]
		effective := 0
		for _, s := range t.Strikes {
			if s.Effect == checker.Effective {
				effective++
			}
		}
		h := 0
		if len(t.Strikes) > 0 {
			h = (tlRow - 4) * effective / len(t.Strikes)
		}
		class := string(t.Result)
		if class == "" {
			class = string(checker.Unknown)
		}
		row.Bars = append(row.Bars, TimelineBar{
			X: tlLabel + int(at*scale), Y: row.Y + 2, W: max(2, int(t.Wall*scale)-1), Class: class,
			EffectH: h, EffectY: row.Y + 2 + (tlRow - 4 - h),
			Title: fmt.Sprintf("t%03d %s, %d of %d strikes took effect: %s", t.N, class, effective, len(t.Strikes), t.Knobs),
		})
		at += t.Wall
	}
	step := tickStep(total)
	for s := 0.0; s <= total; s += step {
		tl.Ticks = append(tl.Ticks, TimelineTick{X: tlLabel + int(s*scale), Label: fmt.Sprintf("%.0f s", s)})
	}
	return tl
}

// tickStep is a round step giving 4–10 ticks over total seconds.
func tickStep(total float64) float64 {
	for _, s := range []float64{5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600} {
		if total/s <= 10 {
			return s
		}
	}
	return 7200
}
