package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/locktest/locktest/history"
)

// dpi is the resolution of CSS pixels: sizes are laid out in pixels at it
// (px), and a PNG is drawn at pngScale times it, sharp on a high-density
// screen. A page shows each image at its CSS size, so its text is as many
// pixels high as it was laid out at.
const (
	dpi      = 96
	pngScale = 2
)

func px(n float64) vg.Length { return vg.Length(n) * vg.Inch / dpi }

// plotFace is the one typeface of every figure and chart, sans-serif like
// the pages that show them.
var plotFace = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Text sizes of the figures, in px: none is smaller than plotSmall, which
// reads on a laptop.
const (
	plotSmall = 12.0 // ticks, legend, fault names
	plotLabel = 13.0 // axis labels, client names
	plotTitle = 16.0
)

// Colors shared by every figure, so a reader learns them once. Red is
// reserved for overlapping holders.
var (
	colorOverlap = color.RGBA{R: 220, G: 20, B: 30, A: 255}
	colorFault   = color.NRGBA{R: 255, G: 165, B: 0, A: 60}
	colorFaultTx = color.RGBA{R: 150, G: 80, B: 0, A: 255}
	colorOK      = color.NRGBA{R: 31, G: 119, B: 180, A: 200}
	colorFail    = color.NRGBA{R: 140, G: 60, B: 160, A: 220}
	colorInfo    = color.NRGBA{R: 255, G: 127, B: 14, A: 230}
	colorMark    = color.RGBA{A: 255}
	colorLost    = color.RGBA{R: 120, G: 0, B: 90, A: 255}
	// keyColors tell lock keys apart; none of them is red.
	keyColors = []color.Color{
		color.RGBA{R: 70, G: 130, B: 180, A: 255},
		color.RGBA{R: 46, G: 139, B: 87, A: 255},
		color.RGBA{R: 112, G: 128, B: 144, A: 255},
		color.RGBA{R: 0, G: 128, B: 128, A: 255},
		color.RGBA{R: 184, G: 134, B: 11, A: 255},
		color.RGBA{R: 106, G: 90, B: 205, A: 255},
	}
	outcomeColors = map[history.Type]color.Color{history.OK: colorOK, history.Fail: colorFail, history.Info: colorInfo}
)

// textStyle is plotFace at sizePx.
func textStyle(sizePx float64, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(plotFace, px(sizePx)), Handler: plot.DefaultTextHandler}
}

// figure is a plot with its legend in a strip underneath, where it covers
// no data.
type figure struct {
	p       *plot.Plot
	legend  []legendEntry
	width   float64 // pixels
	height  float64 // pixels of the plot, without the legend
	xOrigin int64
}

type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

func newFigure(title, ylabel string, width, height float64, start int64) *figure {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(plotFace, px(plotTitle))
	p.Title.Padding = px(10)
	p.X.Label.Text = "seconds since the start of the run"
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(plotFace, px(plotLabel))
		a.Tick.Label.Font = font.From(plotFace, px(plotSmall))
	}
	p.X.Min = 0
	p.X.Tick.Marker = secondTicks{}
	return &figure{p: p, width: width, height: height, xOrigin: start}
}

// secs converts a history time to the x axis.
func (f *figure) secs(t int64) float64 { return float64(t-f.xOrigin) / 1e9 }

func (f *figure) addLegend(name string, thumb plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name, thumb})
}

// faults shades each fault interval and names it at the top of the plot.
func (f *figure) faults(fs []history.Fault) {
	if len(fs) == 0 {
		return
	}
	f.p.Add(&faultBands{faults: fs, fig: f})
	f.addLegend("fault active", swatch{colorFault})
}

// Legend strip geometry, in px.
const legendEntryH, legendPad = 20.0, 6.0

// size is the figure's size with its legend strip.
func (f *figure) size() (w, h vg.Length) {
	return px(f.width), px(f.height + float64(len(f.legendRows()))*legendEntryH + legendPad)
}

// render draws the figure as "png" (at pngScale) or "svg".
func (f *figure) render(format string) ([]byte, error) {
	w, h := f.size()
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi*pngScale))}
	case "svg":
		c = vgsvg.New(w, h)
	default:
		return nil, fmt.Errorf("plot %q: no format %q", f.p.Title.Text, format)
	}
	f.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot %q: %w", f.p.Title.Text, err)
	}
	return buf.Bytes(), nil
}

// draw draws the plot and, under it, the legend onto dc, of f.size().
func (f *figure) draw(dc draw.Canvas) {
	h := dc.Max.Y - dc.Min.Y
	f.p.Draw(draw.Crop(dc, 0, 0, h-px(f.height), 0))
	drawLegend(dc, f.legendRows(), dc.Max.Y-px(f.height))
}

// drawLegend draws rows of legend entries onto dc from top down.
func drawLegend(dc draw.Canvas, rows [][]legendEntry, top vg.Length) {
	sty := textStyle(plotSmall, color.Black)
	sty.YAlign = draw.YCenter
	for i, row := range rows {
		y := top - px(legendPad/2) - px(legendEntryH*(float64(i)+0.5))
		x := dc.Min.X + px(60)
		for _, e := range row {
			thumb := draw.Canvas{Canvas: dc, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - px(6)}, Max: vg.Point{X: x + px(20), Y: y + px(6)}}}
			e.thumb.Thumbnail(&thumb)
			dc.FillText(sty, vg.Point{X: x + px(26), Y: y}, e.name)
			x += px(26) + sty.Width(e.name) + px(22)
		}
	}
}

// legendRows wraps the legend entries into rows that fit the width.
func (f *figure) legendRows() [][]legendEntry { return legendRows(f.legend, f.width) }

// legendRows wraps entries into rows that fit width px.
func legendRows(entries []legendEntry, width float64) [][]legendEntry {
	sty := textStyle(plotSmall, color.Black)
	var rows [][]legendEntry
	var row []legendEntry
	x := px(60)
	for _, e := range entries {
		w := px(26) + sty.Width(e.name) + px(22)
		if len(row) > 0 && x+w > px(width) {
			rows, row, x = append(rows, row), nil, px(60)
		}
		row, x = append(row, e), x+w
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

// faultBands shades fault intervals over the whole height of a plot,
// whatever its y scale, and names each one.
type faultBands struct {
	faults []history.Fault
	fig    *figure
}

func (b *faultBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := textStyle(plotSmall, colorFaultTx)
	sty.YAlign = draw.YTop
	lineH := sty.Height("M")
	for i, f := range b.faults {
		x0 := max(c.Min.X, trX(b.fig.secs(f.Start)))
		x1 := min(c.Max.X, max(trX(b.fig.secs(f.Stop)), x0+px(1)))
		if x1 <= c.Min.X || x0 >= c.Max.X {
			continue
		}
		c.FillPolygon(colorFault, box(x0, x1, c.Min.Y, c.Max.Y))
		// Alternate two lines so neighbouring names do not collide.
		y := c.Max.Y - px(2) - vg.Length(i%2)*lineH
		name := f.Name + " " + f.Target
		if !f.Healed {
			name += " (never healed)"
		}
		at := vg.Point{X: x0 + px(2), Y: y}
		if at.X+sty.Width(name) > c.Max.X { // keep the name inside the plot
			at.X = c.Max.X - sty.Width(name) - px(2)
		}
		c.FillText(sty, at, name)
	}
}

// DataRange covers the faults in x and nothing in y: the bands stretch
// over whatever the data spans.
func (b *faultBands) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = 0, 0
	for _, f := range b.faults {
		xmax = max(xmax, b.fig.secs(f.Stop))
	}
	return xmin, xmax, posInf, negInf
}

// rects fills rectangles given in data coordinates, at least a pixel wide
// so that a short hold still shows.
type rects struct {
	color color.Color
	rs    []rect
}

type rect struct{ x0, x1, y0, y1 float64 }

func (r *rects) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, q := range r.rs {
		x0, x1 := trX(q.x0), trX(q.x1)
		x1 = max(x1, x0+px(1))
		c.FillPolygon(r.color, c.ClipPolygonXY(box(x0, x1, trY(q.y0), trY(q.y1))))
	}
}

func (r *rects) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = posInf, negInf, posInf, negInf
	for _, q := range r.rs {
		xmin, xmax = min(xmin, q.x0), max(xmax, q.x1)
		ymin, ymax = min(ymin, q.y0), max(ymax, q.y1)
	}
	return
}

func (r *rects) Thumbnail(c *draw.Canvas) { swatch{r.color}.Thumbnail(c) }

// swatch is a legend thumbnail filled with one color.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, box(c.Min.X, c.Max.X, c.Min.Y, c.Max.Y))
}

func box(x0, x1, y0, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

// secondTicks labels the time axis every 1, 2, 5, 10, 15, 30, 60… seconds,
// whichever gives at most a dozen labels, with unlabelled ticks between.
type secondTicks struct{}

func (secondTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600} {
		if step = s; (hi-lo)/s <= 12 {
			break
		}
	}
	minor := step / 5
	if step == 15 || step == 30 {
		minor = step / 3
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/minor) * minor; v <= hi+minor/1e6; v += minor {
		t := plot.Tick{Value: v}
		r := math.Mod(v, step)
		if r < 0 { // before the start: Mod keeps the sign
			r += step
		}
		if r < minor/2 || step-r < minor/2 {
			at := math.Round(v/step) * step
			if at == 0 {
				at = 0 // not -0, which an axis from below 0 gives (math.Ceil(-0.5))
			}
			t.Label = strconv.FormatFloat(at, 'f', -1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
