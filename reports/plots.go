package reports

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locktest/locktest/history"
)

var outcomes = []history.Type{history.OK, history.Fail, history.Info}

// latencyPlot draws how long each acquire and release took, at the time
// it completed, with a line back to its call: a long acquire ends right of
// the fault it waited through and spans it. The shape says which op, the
// color how it ended. Info ops are drawn at the time they gave up; ops
// that never completed are left out (the title counts them). The y axis
// is logarithmic because a healthy acquire takes a fraction of a
// millisecond and a stalled one seconds.
func latencyPlot(ops []history.Op, faults []history.Fault, start, end int64) *figure {
	f := newFigure("Acquire and release latency", "latency (ms, log scale)", 1100, 380, start)
	f.p.X.Max = f.secs(end)
	f.faults(faults)
	shapes := map[string]draw.GlyphDrawer{history.FAcquire: draw.CircleGlyph{}, history.FRelease: draw.TriangleGlyph{}}
	const floor = 0.01 // ms: a log axis has no zero
	var never int
	ymin, ymax := posInf, negInf
	// Dots of one series that fall on the same pixel look the same: each
	// pixel is drawn once, so that a long history renders in seconds. A
	// decade of latency is some 70 pixels high.
	xcells := f.width / max(f.secs(end), 1e-9)
	const ycells = 70.0
	for _, fn := range []string{history.FAcquire, history.FRelease} {
		for _, o := range outcomes {
			var xys plotter.XYs
			waits := &spans{color: outcomeColors[o]}
			var n int
			drawn := map[[2]int32]bool{}
			for _, op := range ops {
				if op.F != fn || op.Outcome != o || op.Process < 0 {
					continue
				}
				if op.Completed == history.Never {
					never++
					continue
				}
				// log10 on a linear axis: gonum's LogScale misplaces the
				// axis label and leaves a gap under the title.
				y := math.Log10(max(floor, float64(op.Completed-op.Call)/1e6))
				x := f.secs(op.Completed)
				n++
				ymin, ymax = min(ymin, y), max(ymax, y)
				// One point (and its line back to the call) per pixel cell:
				// a long history draws in the time a short one does.
				if cell := [2]int32{int32(math.Floor(x * xcells)), int32(math.Floor(y * ycells))}; !drawn[cell] {
					drawn[cell] = true
					xys = append(xys, plotter.XY{X: x, Y: y})
					waits.lines = append(waits.lines, [2]plotter.XY{{X: f.secs(op.Call), Y: y}, {X: x, Y: y}})
				}
			}
			if n == 0 {
				continue
			}
			f.p.Add(waits)
			s, _ := plotter.NewScatter(xys)
			s.GlyphStyle = draw.GlyphStyle{Color: outcomeColors[o], Radius: px(2.5), Shape: shapes[fn]}
			f.p.Add(s)
			f.addLegend(fmt.Sprintf("%s %s (%d)", fn, o, n), s)
		}
	}
	if ymin > ymax { // nothing to draw
		ymin, ymax = -1, 3
	}
	// Whole decades, with room above the highest point for fault names.
	f.p.Y.Min, f.p.Y.Max = math.Floor(ymin), math.Ceil(ymax+0.8)
	f.p.Y.Tick.Marker = decades{}
	if never > 0 {
		f.p.Title.Text += fmt.Sprintf(" (%d ops never completed, not drawn)", never)
	}
	return f
}

// spans draws each op's wait: a thin line from its call to its
// completion, at its latency's height.
type spans struct {
	color color.Color
	lines [][2]plotter.XY
}

func (s *spans) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	// Faint: timeouts retried back to back would otherwise make a bar.
	faint := color.NRGBAModel.Convert(s.color).(color.NRGBA)
	faint.A = 90
	sty := draw.LineStyle{Color: faint, Width: px(1)}
	for _, l := range s.lines {
		c.StrokeLines(sty, c.ClipLinesXY([]vg.Point{{X: trX(l[0].X), Y: trY(l[0].Y)}, {X: trX(l[1].X), Y: trY(l[1].Y)}})...)
	}
}

// ratePlot draws operations completed per second, one line per outcome.
// Bins are one second long for runs up to two minutes, longer beyond so
// that a line keeps about a hundred points.
func ratePlot(ops []history.Op, faults []history.Fault, start, end int64) *figure {
	span := float64(end-start) / 1e9
	bin := max(1, math.Ceil(span/120))
	f := newFigure(fmt.Sprintf("Operations per second by outcome (bins of %g s)", bin), "ops/s", 1100, 300, start)
	f.p.X.Max = span
	f.p.Y.Min = 0
	f.p.Y.Tick.Marker = plainTicks{}
	f.faults(faults)
	// The last bin runs to the end and is 0.5 to 1.5 bins long, so that a
	// sliver of a bin does not make a spike.
	nbins := max(1, int(math.Round(span/bin)))
	var top float64
	for _, o := range outcomes {
		counts := make([]float64, nbins)
		var total int
		for _, op := range ops {
			if op.Process < 0 || op.Outcome != o || op.Completed == history.Never {
				continue
			}
			i := min(nbins-1, int(f.secs(op.Completed)/bin))
			if i >= 0 {
				counts[i]++
				total++
			}
		}
		if total == 0 && o != history.OK {
			continue
		}
		// A step per bin: the rate held over the whole bin.
		xys := make(plotter.XYs, nbins+1)
		for i, c := range counts {
			from, to := float64(i)*bin, float64(i+1)*bin
			if i == nbins-1 {
				to = span
			}
			xys[i] = plotter.XY{X: from, Y: c / max(to-from, 0.001)}
		}
		xys[nbins] = plotter.XY{X: span, Y: xys[nbins-1].Y}
		for _, xy := range xys {
			top = max(top, xy.Y)
		}
		l, _ := plotter.NewLine(xys)
		l.StepStyle = plotter.PostStep
		l.Color = outcomeColors[o]
		l.Width = vg.Points(1.5)
		f.p.Add(l)
		f.addLegend(fmt.Sprintf("%s (%d ops)", o, total), l)
	}
	f.p.Y.Max = max(1, top*1.2) // room for the fault names
	return f
}

// decades ticks a log10 axis: labels at powers of ten, minor ticks between.
type decades struct{}

func (decades) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for d := math.Floor(lo); d <= hi; d++ {
		ticks = append(ticks, plot.Tick{Value: d, Label: strconv.FormatFloat(math.Pow(10, d), 'f', -1, 64)})
		for i := 2.0; i < 10; i++ {
			if v := d + math.Log10(i); v <= hi {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
}

// samplePlot draws value of each process over the samples, one line per
// process (named as the samples name it), leaving out the processes in
// skip, the moments a process could not be read, and those where value
// is NaN (a figure it could not give then); a process with no value at
// all has no line. The x axis runs from
// the first sample, before the run's start, to the last, after its end.
func samplePlot(title, ylabel string, samples []Sample, faults []history.Fault, start, end int64, value func(ProcSample) float64, skip ...string) *figure {
	f := newFigure(title, ylabel, 1100, 300, start)
	f.p.X.Min = min(0, math.Floor(f.secs(samples[0].Time))) // whole seconds: no "-0" tick
	f.p.X.Max = max(f.secs(end), f.secs(samples[len(samples)-1].Time))
	f.p.Y.Min = 0
	f.p.Y.Tick.Marker = plainTicks{}
	f.faults(faults)
	lines := map[string]plotter.XYs{}
	var names []string
	for _, s := range samples {
		for _, p := range s.Procs {
			if p.Error != "" || slices.Contains(skip, p.Name) {
				continue
			}
			v := value(p)
			if math.IsNaN(v) {
				continue
			}
			if _, ok := lines[p.Name]; !ok {
				names = append(names, p.Name)
			}
			lines[p.Name] = append(lines[p.Name], plotter.XY{X: f.secs(s.Time), Y: v})
		}
	}
	var top float64
	for i, name := range names {
		l, _ := plotter.NewLine(lines[name])
		l.Color = keyColors[i%len(keyColors)]
		l.Width = vg.Points(1.5)
		f.p.Add(l)
		f.addLegend(name, l)
		for _, xy := range lines[name] {
			top = max(top, xy.Y)
		}
	}
	f.p.Y.Max = max(1, top*1.2) // room for the fault names
	return f
}

// runPlot draws the run's figures in the samples over time: lost updates
// so far, strikes begun and strikes that hit (RunFigures).
func runPlot(samples []Sample, faults []history.Fault, start, end int64) *figure {
	f := newFigure("Lost updates and fault strikes so far", "count", 1100, 300, start)
	f.p.X.Min = min(0, math.Floor(f.secs(samples[0].Time)))
	f.p.X.Max = max(f.secs(end), f.secs(samples[len(samples)-1].Time))
	f.p.Y.Min = 0
	f.p.Y.Tick.Marker = plainTicks{}
	f.faults(faults)
	var top float64
	for i, sr := range []struct {
		name string
		v    func(RunFigures) int
	}{
		{"lost updates", func(r RunFigures) int { return r.Lost }},
		{"strikes begun", func(r RunFigures) int { return r.Strikes }},
		{"strikes that hit", func(r RunFigures) int { return r.Effective }},
	} {
		var xys plotter.XYs
		for _, s := range samples {
			if s.Run != nil {
				xys = append(xys, plotter.XY{X: f.secs(s.Time), Y: float64(sr.v(*s.Run))})
				top = max(top, float64(sr.v(*s.Run)))
			}
		}
		l, _ := plotter.NewLine(xys)
		l.Color = keyColors[i%len(keyColors)]
		l.Width = vg.Points(1.5)
		f.p.Add(l)
		f.addLegend(sr.name, l)
	}
	f.p.Y.Max = max(1, top*1.2)
	return f
}
