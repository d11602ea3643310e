package envelope

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // registers png
	_ "gonum.org/v1/plot/vg/vgsvg" // registers svg
)

// The figure follows reports' style: pixels at 96 dpi, the legend in a
// strip under the plot where it covers no data, the same blue for what
// held and purple for what failed. Text is sans-serif, 12 px and up.
const dpi = 96

func px(n float64) vg.Length { return vg.Length(n) * vg.Inch / dpi }

var (
	sans         = font.Font{Typeface: "Liberation", Variant: "Sans"}
	stateColors  = map[State]color.Color{Safe: color.NRGBA{R: 31, G: 119, B: 180, A: 230}, Unsafe: color.NRGBA{R: 140, G: 60, B: 160, A: 230}, Unknown: color.NRGBA{R: 255, G: 127, B: 14, A: 230}}
	colorBracket = color.NRGBA{R: 140, G: 60, B: 160, A: 40}
	colorRef     = color.RGBA{R: 90, G: 90, B: 90, A: 255}
	colorLine    = color.RGBA{R: 150, G: 150, B: 150, A: 255}
)

func style(size float64, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(sans, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// curve draws the fraction of seeds that lost an update against the
// magnitude, every judged point, with the final bracket shaded and the
// plan's reference magnitudes marked; format is "png" or "svg".
func curve(rep *Report, format string) ([]byte, error) {
	const width, height, strip = 900.0, 460.0, 30.0
	p, pl := plot.New(), rep.Plan
	p.Title.Text = fmt.Sprintf("%s under %s: share of seeds that lost an update", rep.Impl, pl.Fault)
	p.Title.TextStyle.Font = font.From(sans, vg.Points(13))
	p.Title.Padding = px(10)
	unit := fmt.Sprintf("in TTLs (TTL = %s)", rep.TTL)
	if pl.Unit == "rate" {
		unit = "(1 = true speed)"
	}
	p.X.Label.Text = pl.Knob + " " + unit
	p.Y.Label.Text = "seeds that lost an update"
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, vg.Points(11))
		a.Tick.Label.Font = font.From(sans, vg.Points(10))
	}
	p.X.Min, p.X.Max = min(0, pl.Lo), pl.Hi*1.04
	p.Y.Min, p.Y.Max = -0.04, 1.12
	p.Y.Tick.Marker = fractionTicks{}
	p.X.Tick.Marker = stepTicks{}

	var legend []legendEntry
	if o := rep.Outcome; o.Finding == FoundBoundary && o.Safe != nil && o.Unsafe != nil {
		p.Add(&band{x0: *o.Safe, x1: *o.Unsafe, color: colorBracket})
		legend = append(legend, legendEntry{fmt.Sprintf("boundary: %s – %s", pl.Label(*o.Safe), pl.Label(*o.Unsafe)), swatch{colorBracket}})
	}
	for _, r := range rep.References {
		l, _ := plotter.NewLine(plotter.XYs{{X: r.At, Y: p.Y.Min}, {X: r.At, Y: p.Y.Max}})
		l.Color, l.Width, l.Dashes = colorRef, vg.Points(1), []vg.Length{px(5), px(4)}
		p.Add(l)
		p.Add(&label{x: r.At, text: " " + r.Label, style: style(9, colorRef)})
	}
	pts := rep.Sorted()
	var line plotter.XYs
	for _, pt := range pts {
		line = append(line, plotter.XY{X: pt.Magnitude, Y: pt.Fraction()})
	}
	if len(line) > 1 {
		l, _ := plotter.NewLine(line)
		l.Color, l.Width = colorLine, vg.Points(1)
		p.Add(l)
	}
	for _, st := range []State{Safe, Unsafe, Unknown} {
		var xys plotter.XYs
		for _, pt := range pts {
			if pt.State == st {
				xys = append(xys, plotter.XY{X: pt.Magnitude, Y: pt.Fraction()})
			}
		}
		if len(xys) == 0 {
			continue
		}
		s, _ := plotter.NewScatter(xys)
		s.GlyphStyle = draw.GlyphStyle{Color: stateColors[st], Radius: px(5), Shape: draw.CircleGlyph{}}
		p.Add(s)
		legend = append(legend, legendEntry{fmt.Sprintf("%s point (%d)", st, len(xys)), s})
	}

	p.Add(&counts{pts: pts})
	w, h := px(width), px(height+strip)
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, fmt.Errorf("envelope plot: %w", err)
	}
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 0, 0, px(strip), 0))
	sty := style(9, color.Black)
	sty.YAlign = draw.YCenter
	x, y := px(60), px(strip/2)
	for _, e := range legend {
		thumb := draw.Canvas{Canvas: dc, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y - px(6)}, Max: vg.Point{X: x + px(20), Y: y + px(6)}}}
		e.thumb.Thumbnail(&thumb)
		dc.FillText(sty, vg.Point{X: x + px(26), Y: y}, e.name)
		x += px(26) + sty.Width(e.name) + px(22)
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("envelope plot: %w", err)
	}
	return buf.Bytes(), nil
}

// band shades the magnitudes between x0 and x1 over the whole height.
type band struct {
	x0, x1 float64
	color  color.Color
}

func (b *band) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := trX(b.x0), max(trX(b.x1), trX(b.x0)+px(2))
	c.FillPolygon(b.color, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
}

// label writes text along the top edge of the plot at x.
type label struct {
	x     float64
	text  string
	style text.Style
}

func (l *label) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := l.style
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	c.FillText(sty, vg.Point{X: trX(l.x), Y: c.Max.Y - px(2)}, l.text)
}

// counts writes "k/N" by each point, above it (below near the top), and
// staggers a label that would touch its left neighbour's.
type counts struct{ pts []Point }

func (l *counts) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := style(9, color.Black)
	sty.XAlign = draw.XCenter
	prevX, prevY, stagger := vg.Length(-1e9), -1.0, 0
	for _, pt := range l.pts {
		x, y := trX(pt.Magnitude), pt.Fraction()
		text := fmt.Sprintf("%d/%d", pt.Unsafe, len(pt.Runs))
		if y == prevY && x-prevX < sty.Width(text)+px(4) {
			stagger++
		} else {
			stagger = 0
		}
		prevX, prevY = x, y
		off := px(8) + vg.Length(stagger)*px(14)
		sty.YAlign = draw.YBottom
		if y > 0.9 {
			sty.YAlign, off = draw.YTop, -off
		}
		c.FillText(sty, vg.Point{X: x, Y: trY(y) + off}, text)
	}
}

// swatch is a legend thumbnail filled with one color.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// fractionTicks labels the share of seeds at 0, ¼, ½, ¾ and 1 as percents.
type fractionTicks struct{}

func (fractionTicks) Ticks(_, _ float64) []plot.Tick {
	var ticks []plot.Tick
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.Itoa(int(v*100)) + "%"})
	}
	return ticks
}

// stepTicks label the magnitude axis every 0.25, 0.5, 1, 2 or 5 units,
// whichever gives at most a dozen labels, with a minor tick between.
type stepTicks struct{}

func (stepTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 0.25
	for _, s := range []float64{0.25, 0.5, 1, 2, 5} {
		if step = s; (hi-lo)/s <= 12 {
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step*2) * step / 2; v <= hi; v += step / 2 {
		t := plot.Tick{Value: v}
		if r := math.Mod(v, step); r < step/4 || step-r < step/4 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
