package reports

import (
	"encoding/base64"
	"html/template"
	"image/color"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var outcomeFill = map[Outcome]color.Color{
	Safe:      color.RGBA{R: 200, G: 235, B: 200, A: 255},
	Unsafe:    color.RGBA{R: 245, G: 180, B: 180, A: 255},
	Undecided: color.RGBA{R: 250, G: 228, B: 170, A: 255},
}

// chart draws the matrix: a colored tile per design and fault, with the
// cell's lines written in it.
func (m Matrix) chart() *figure {
	w := 190 + 230*float64(len(m.Faults))
	h := 90 + 105*float64(len(m.Designs))
	f := newFigure("Designs under faults", "", w, h, 0)
	f.p.X.Label.Text = "fault"
	f.p.NominalX(m.Faults...)
	// Designs top to bottom in the order of the tables.
	rev := make([]string, len(m.Designs))
	for i, d := range m.Designs {
		rev[len(m.Designs)-1-i] = d
	}
	f.p.NominalY(rev...)
	f.p.X.Min, f.p.X.Max = -0.5, float64(len(m.Faults))-0.5
	f.p.Y.Min, f.p.Y.Max = -0.5, float64(len(m.Designs))-0.5
	f.p.X.Padding, f.p.Y.Padding = 0, 0
	f.p.Y.Tick.Label.Font.Size = vg.Points(10)
	f.p.X.Tick.Label.Font.Size = vg.Points(10)
	f.p.Add(&tiles{m: m})
	for _, o := range []Outcome{Safe, Unsafe, Undecided} {
		f.addLegend(string(o), swatch{outcomeFill[o]})
	}
	return f
}

type tiles struct{ m Matrix }

func (t *tiles) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := textStyle(vg.Points(8.5), color.Black)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	bold := sty
	bold.Font.Size = vg.Points(11)
	bold.Font.Weight = xfont.WeightBold
	row := map[string]float64{}
	for i, d := range t.m.Designs {
		row[d] = float64(len(t.m.Designs) - 1 - i)
	}
	for i, fault := range t.m.Faults {
		for _, d := range t.m.Designs {
			x, y := float64(i), row[d]
			x0, x1, y0, y1 := trX(x-0.48), trX(x+0.48), trY(y-0.46), trY(y+0.46)
			cell, ok := t.m.Cell(d, fault)
			if !ok {
				c.FillPolygon(color.Gray{Y: 240}, box(x0, x1, y0, y1))
				c.FillText(sty, vg.Point{X: trX(x), Y: trY(y)}, "not run")
				continue
			}
			c.FillPolygon(outcomeFill[cell.Outcome], box(x0, x1, y0, y1))
			lines := cell.Lines()
			// The verdict in bold, the figures centered under it.
			lineH := sty.Height("X") * 1.15
			rest := vg.Length(len(lines) - 1)
			top := trY(y) + (lineH*1.4+lineH*rest)/2
			c.FillText(bold, vg.Point{X: trX(x), Y: top - lineH*0.7}, strings.ToUpper(lines[0]))
			c.FillText(sty, vg.Point{X: trX(x), Y: top - lineH*1.4 - lineH*rest/2}, strings.Join(lines[1:], "\n"))
		}
	}
}

var compareTmpl = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>locktest: designs × faults</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1280px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: .4em .6em; vertical-align: top; }
th { background: #f4f4f4; } .safe { background: #e3f4e5; } .unsafe { background: #fbe2e2; } .unknown { background: #fff3d6; }
td small { color: #444; } img { max-width: 100%; border: 1px solid #ddd; } code { font-size: 12px; background: #f4f4f4; }
</style></head><body>
<h1>locktest: {{len .M.Designs}} design(s) × {{len .M.Faults}} fault(s)</h1>
<table><tr><th>design \ fault</th>{{range .M.Faults}}<th>{{.}}</th>{{end}}</tr>
{{range $d := .M.Designs}}<tr><th>{{$d}}</th>{{range $f := $.M.Faults}}{{with $.Cell $d $f}}<td class="{{.Outcome}}"><b>{{index .Lines 0}}</b>{{range $i, $l := .Lines}}{{if $i}}<br><small>{{$l}}</small>{{end}}{{end}}
<br><small>{{range $i, $r := .Reports}}{{if $i}}, {{end}}<a href="{{$r}}">report</a>{{end}}</small></td>{{else}}<td>—</td>{{end}}{{end}}</tr>
{{end}}</table>
<p><small>Each cell: verdict of the check the workload decides by; lost updates and the time of the first violation; acquire latency p50/p99;
acquisitions per second and store commands per acquisition; median time from a fault (holder paused or killed) to the next acquisition by
another client. With several runs, figures are medians over runs.</small></p>
<img src="{{.Chart}}" alt="matrix chart">
{{with .Repro}}<h2>Reproduce</h2><ul>{{range .}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{range .M.Notes}}<p>⚠ {{.}}</p>{{end}}
<p><small>Also: <a href="compare.json">compare.json</a>, <a href="compare.md">compare.md</a>, <a href="compare.png">compare.png</a>.</small></p>
</body></html>
`))

type compareCell struct {
	Cell
	Reports []template.URL
}

type comparePage struct {
	M     Matrix
	Chart template.URL
	Repro []string
	cells map[[2]string]compareCell
}

func (p comparePage) Cell(design, fault string) *compareCell {
	c, ok := p.cells[[2]string{design, fault}]
	if !ok {
		return nil
	}
	return &c
}

// html writes compare.html into dir; links to run reports are relative
// to dir when possible, so the pair can be moved together.
func (m Matrix) html(w io.Writer, dir string, png []byte) error {
	p := comparePage{M: m, cells: map[[2]string]compareCell{},
		Chart: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))}
	absDir, _ := filepath.Abs(dir)
	for _, c := range m.Cells {
		cc := compareCell{Cell: c}
		for _, d := range c.Dirs {
			target := filepath.Join(d, ReportFile)
			if rel, err := filepath.Rel(absDir, target); err == nil {
				target = filepath.ToSlash(rel)
			} else {
				target = (&url.URL{Scheme: "file", Path: target}).String()
			}
			cc.Reports = append(cc.Reports, template.URL(target))
		}
		p.cells[[2]string{c.Design, c.Fault}] = cc
		if c.Outcome != Safe {
			p.Repro = append(p.Repro, c.Command)
		}
	}
	return compareTmpl.Execute(w, p)
}
