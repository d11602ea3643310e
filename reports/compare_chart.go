package reports

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"net/url"
	"path/filepath"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var outcomeFill = map[Outcome]color.Color{
	Safe:      color.RGBA{R: 200, G: 235, B: 200, A: 255},
	Unsafe:    color.RGBA{R: 245, G: 180, B: 180, A: 255},
	Undecided: color.RGBA{R: 250, G: 228, B: 170, A: 255},
}

// The chart is laid out in CSS pixels (px) and rendered at pngScale
// times that, so that it stays sharp on a high-density screen; the page
// shows it at its CSS size and never scales it down, so its smallest text
// (chartSmall) is that many pixels high wherever it is read.
const (
	chartSmall  = 12.0 // px: the figures in a tile, the settings of a column, the footnote
	chartLabel  = 13.0 // px: faults and designs
	chartBig    = 14.0 // px: the verdict
	chartTitle  = 16.0 // px
	chartMargin = 12.0
	chartPad    = 10.0 // inside a tile
	chartGap    = 4.0  // between tiles
)

func chartStyle(sizePx float64, bold bool) text.Style {
	f := plotFace
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{Color: color.Black, Font: font.From(f, px(sizePx)), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YTop}
}

// lineHeight is the advance from one line of sty to the next, in px.
func lineHeight(sty text.Style) float64 { return float64(sty.Font.Size/px(1)) * 1.3 }

func widthPx(sty text.Style, s string) float64 { return float64(sty.Width(s) / px(1)) }

// chart is the matrix drawn as a grid: a tile per design and fault
// column, colored by its verdict and holding the verdict and the cell's
// safety facts, a phrase a line, so that columns stay narrow enough for a
// laptop screen; compare.html's table has the rest.
type chart struct {
	png           []byte
	width, height int // CSS pixels
}

// chartLabelMax is the width, in px, past which a design label wraps.
const chartLabelMax = 160.0

func (m Matrix) chart() (chart, error) {
	title, label, small, big := chartStyle(chartTitle, true), chartStyle(chartLabel, true), chartStyle(chartSmall, false), chartStyle(chartBig, true)
	widest := func(sty text.Style, lines []string) float64 {
		w := 0.0
		for _, l := range lines {
			w = max(w, widthPx(sty, l))
		}
		return w
	}
	// The left margin holds the longest design label.
	designs := make([][]string, len(m.Designs))
	left, rowH := 0.0, 0.0
	for i, d := range m.Designs {
		designs[i] = wrap(label, d, chartLabelMax)
		left = max(left, widest(label, designs[i]))
		rowH = max(rowH, float64(len(designs[i]))*lineHeight(label))
	}
	left += chartMargin + chartPad
	// Each column is as wide as its widest phrase; the fault's name wraps
	// at a hyphen to fit, but never more narrowly than its longest part.
	type column struct {
		fault, variant []string
		width          float64
	}
	cols := make([]column, len(m.Columns))
	headH := 0.0
	for i, col := range m.Columns {
		var variant []string
		if col.Variant != "" {
			variant = strings.Split(col.Variant, ", ")
		}
		w := widest(small, variant)
		for _, d := range m.Designs {
			c, ok := m.Cell(d, col)
			if !ok {
				continue
			}
			lines := c.chartLines()
			w = max(w, widthPx(big, lines[0]), widest(small, lines[1:]))
			rowH = max(rowH, lineHeight(big)+float64(len(lines)-1)*lineHeight(small))
		}
		fault := wrap(label, col.Fault, w)
		cols[i] = column{fault: fault, variant: variant, width: max(w, widest(label, fault)) + 2*chartPad}
		headH = max(headH, float64(len(fault))*lineHeight(label)+float64(len(variant))*lineHeight(small))
	}
	rowH += 2 * chartPad
	headH += chartGap
	width := left
	for _, c := range cols {
		width += c.width + chartGap
	}
	width += chartMargin
	note := wrap(small, "Each tile: the verdict; runs unsafe of the runs decided and the 95% confidence interval of the "+
		"unsafe rate; lost updates and the first violation. Latency, throughput and recovery: compare.html, compare.md.",
		width-2*chartMargin)
	titleH := lineHeight(title) + chartGap
	// Whole CSS pixels, so that the PNG is exactly pngScale times the size
	// the page shows it at.
	width = math.Ceil(width)
	height := math.Ceil(chartMargin + titleH + headH + float64(len(m.Designs))*(rowH+chartGap) + chartGap +
		float64(len(note))*lineHeight(small) + chartMargin)

	cv := vgimg.NewWith(vgimg.UseWH(px(width), px(height)), vgimg.UseDPI(dpi*pngScale))
	c := draw.New(cv)
	c.FillPolygon(color.White, box(0, px(width), 0, px(height)))
	// text writes lines from (x, y), the top left in px, and returns the
	// y under them.
	text := func(sty text.Style, x, y float64, lines ...string) float64 {
		for _, l := range lines {
			c.FillText(sty, vg.Point{X: px(x), Y: px(height - y)}, l)
			y += lineHeight(sty)
		}
		return y
	}
	y := text(title, chartMargin, chartMargin, "Designs under faults") + chartGap
	x := left
	for _, col := range cols {
		text(small, x+chartPad, text(label, x+chartPad, y, col.fault...), col.variant...)
		x += col.width + chartGap
	}
	y += headH
	for i, d := range m.Designs {
		text(label, chartMargin, y+(rowH-float64(len(designs[i]))*lineHeight(label))/2, designs[i]...)
		x := left
		for j, col := range m.Columns {
			tile := box(px(x), px(x+cols[j].width), px(height-y), px(height-y-rowH))
			if cell, ok := m.Cell(d, col); ok {
				c.FillPolygon(outcomeFill[cell.Outcome], tile)
				lines := cell.chartLines()
				text(small, x+chartPad, text(big, x+chartPad, y+chartPad, lines[0]), lines[1:]...)
			} else {
				c.FillPolygon(color.Gray{Y: 240}, tile)
				text(small, x+chartPad, y+chartPad, "not run")
			}
			x += cols[j].width + chartGap
		}
		y += rowH + chartGap
	}
	text(small, chartMargin, y+chartGap, note...)
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
		return chart{}, fmt.Errorf("draw the comparison chart: %w", err)
	}
	return chart{png: buf.Bytes(), width: int(width), height: int(height)}, nil
}

// chartLines are what a tile says: the verdict, then a line for each
// safety fact.
func (c Cell) chartLines() []string {
	lines := []string{strings.ToUpper(string(c.Outcome))}
	for _, phrases := range c.safetyFacts() {
		lines = append(lines, phrases...)
	}
	return lines
}

// wrap breaks s into lines of sty no wider than width px where it can,
// after a space or a hyphen.
func wrap(sty text.Style, s string, width float64) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		sep := " " // before a word; none before the rest of a hyphenated one
		for part := range strings.SplitAfterSeq(word, "-") {
			next := strings.TrimPrefix(line+sep+part, " ")
			sep = ""
			if line != "" && widthPx(sty, next) > width {
				lines, next = append(lines, line), part
			}
			line = next
		}
	}
	return append(lines, line)
}

var compareTmpl = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>locktest: designs × faults</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1280px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: .4em .6em; vertical-align: top; }
th { background: #f4f4f4; } th small { font-weight: normal; } .safe { background: #e3f4e5; } .unsafe { background: #fbe2e2; } .unknown { background: #fff3d6; }
small { font-size: 12px; } td small { color: #444; } code { font-size: 12px; background: #f4f4f4; }
.wide { overflow-x: auto; } .wide img { max-width: none; border: 1px solid #ddd; }
</style></head><body>
{{with .M.Envelopes.Sweeps}}<h1>How big a fault each design survives</h1>
<div class="wide"><table><tr><th>design \ fault</th>{{range $.M.Envelopes.Columns}}<th>{{.}}</th>{{end}}</tr>
{{range $d := $.M.Envelopes.Designs}}<tr><th>{{$d}}</th>{{range $col := $.M.Envelopes.Columns}}{{with $.Sweep $d $col}}<td class="{{.Outcome}}"><b>{{.Head}}</b><br><small>{{.Detail}}</small>
<br><small><a href="{{.Link}}">sweep</a></small></td>{{else}}<td>—</td>{{end}}{{end}}</tr>
{{end}}</table></div>
<p><small>{{$.EnvelopeLegend}}</small></p>
<div class="wide"><img src="{{$.Curves}}" width="{{$.CurvesWidth}}" height="{{$.CurvesHeight}}" alt="share of seeds that lost an update against the fault's size, a line per design"></div>
{{end}}{{if .M.Cells}}<h1>locktest: {{len .M.Designs}} design(s) × {{len .M.Columns}} fault column(s)</h1>
<div class="wide"><img src="{{.Chart}}" width="{{.ChartWidth}}" height="{{.ChartHeight}}" alt="designs under faults: each tile's verdict and unsafe rate"></div>
<div class="wide"><table><tr><th>design \ fault</th>{{range .M.Columns}}<th>{{.Fault}}{{with .Variant}}<br><small>{{.}}</small>{{end}}</th>{{end}}</tr>
{{range $d := .M.Designs}}<tr><th>{{$d}}</th>{{range $col := $.M.Columns}}{{with $.Cell $d $col}}<td class="{{.Outcome}}"><b>{{index .Lines 0}}</b>{{range $i, $l := .Lines}}{{if $i}}<br><small>{{$l}}</small>{{end}}{{end}}
<br><small>{{range $i, $r := .Reports}}{{if $i}}, {{end}}<a href="{{$r}}">report</a>{{end}}</small></td>{{else}}<td>—</td>{{end}}{{end}}</tr>
{{end}}</table></div>
<p><small>{{.Legend}}</small></p>{{end}}
{{with .Repro}}<h2>Reproduce</h2><ul>{{range .}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{range .M.Notes}}<p>⚠ {{.}}</p>{{end}}
<p><small>Also: <a href="compare.json">compare.json</a>, <a href="compare.md">compare.md</a>, <a href="compare.png">compare.png</a>{{if .M.Envelopes.Sweeps}}, <a href="envelopes.png">envelopes.png</a>{{end}}.</small></p>
</body></html>
`))

type compareCell struct {
	Cell
	Reports []template.URL
}

type cellKey struct {
	design string
	column Column
}

type comparePage struct {
	M                         Matrix
	Legend, EnvelopeLegend    string
	Chart, Curves             template.URL
	ChartWidth, ChartHeight   int
	CurvesWidth, CurvesHeight int
	Repro                     []string
	cells                     map[cellKey]compareCell
	dir                       string
}

// envelopeCell is a sweep as compare.html shows it.
type envelopeCell struct {
	Head, Detail string
	Outcome      Outcome
	Link         template.URL
}

// Sweep returns a design's sweep in an envelope column, or nil.
func (p comparePage) Sweep(design string, col EnvelopeColumn) *envelopeCell {
	e, ok := p.M.Envelopes.Sweep(design, col)
	if !ok {
		return nil
	}
	c := envelopeCell{Outcome: e.outcome(), Link: p.link(filepath.Join(e.Dir, "summary.txt"))}
	c.Head, c.Detail = e.Survived()
	return &c
}

// link is target relative to the page's directory when it can be, so
// that the page and what it links to can be moved together. The path is
// URL-escaped: a directory named like "javascript:x" stays a relative
// path, not a scheme the page would trust.
func (p comparePage) link(target string) template.URL {
	if abs, err := filepath.Abs(target); err == nil {
		target = abs
	}
	if rel, err := filepath.Rel(p.dir, target); err == nil {
		return template.URL((&url.URL{Path: filepath.ToSlash(rel)}).String())
	}
	return template.URL((&url.URL{Scheme: "file", Path: target}).String())
}

func (p comparePage) Cell(design string, column Column) *compareCell {
	c, ok := p.cells[cellKey{design, column}]
	if !ok {
		return nil
	}
	return &c
}

// html writes compare.html into dir; links to run reports are relative
// to dir when possible, so the pair can be moved together.
func (m Matrix) html(w io.Writer, dir string, ch, curves chart) error {
	p := comparePage{M: m, Legend: cellLegend, EnvelopeLegend: envelopeLegend, cells: map[cellKey]compareCell{},
		ChartWidth: ch.width, ChartHeight: ch.height, CurvesWidth: curves.width, CurvesHeight: curves.height,
		Chart:  template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(ch.png)),
		Curves: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(curves.png))}
	p.dir, _ = filepath.Abs(dir)
	for _, c := range m.Cells {
		cc := compareCell{Cell: c}
		for _, d := range c.Dirs {
			cc.Reports = append(cc.Reports, p.link(filepath.Join(d, ReportFile)))
		}
		p.cells[cellKey{c.Design, c.Column()}] = cc
		if c.Outcome != Safe {
			p.Repro = append(p.Repro, c.Command)
		}
	}
	return compareTmpl.Execute(w, p)
}
