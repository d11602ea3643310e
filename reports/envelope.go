package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// EnvelopeFile is a sweep's result in its directory (package envelope
// writes it). A comparison reads it here, and leaves the sweep's own runs
// out of the designs × faults matrix: each point's runs are tuned to its
// magnitude, so they are no cell of it.
const EnvelopeFile = "envelope.json"

// Envelope is how big a fault one design survived: the part of a sweep's
// envelope.json a comparison shows.
type Envelope struct {
	Impl     string          `json:"impl"`
	Workload string          `json:"workload"`
	TTL      string          `json:"ttl"`
	Clients  int             `json:"clients"`
	Seeds    []int64         `json:"seeds"`
	Plan     EnvelopePlan    `json:"plan"`
	Points   []EnvelopePoint `json:"points"`
	Outcome  struct {
		Finding   string   `json:"finding"`
		Safe      *float64 `json:"safe"`
		Unsafe    *float64 `json:"unsafe"`
		Converged bool     `json:"converged"`
	} `json:"outcome"`
	Runs        int       `json:"runs"`
	Elapsed     float64   `json:"elapsed_s"`
	Started     time.Time `json:"started"`
	Interrupted bool      `json:"interrupted"`
	// Dir is where the sweep was found.
	Dir string `json:"dir"`
	// ServerTimeouts are the servers' timeouts the sweep ran under
	// ("server_keepalive=4s"); none: each server's default.
	ServerTimeouts []string `json:"server_timeouts,omitempty"`
}

// EnvelopePlan is what a sweep grew: a fault, by one magnitude (pause,
// delay, clock, rate, lockdelay) in a unit ("TTL" or "rate"), between Lo
// and Hi.
type EnvelopePlan struct {
	Fault string  `json:"fault"`
	Vary  string  `json:"vary"`
	Knob  string  `json:"knob"`
	Unit  string  `json:"unit"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// EnvelopePoint is one magnitude judged on every seed.
type EnvelopePoint struct {
	Magnitude float64           `json:"magnitude"`
	State     string            `json:"state"`
	Unsafe    int               `json:"unsafe"`
	Unfair    int               `json:"unfair"`
	Runs      []json.RawMessage `json:"runs"`
}

// ReadEnvelope reads a sweep's envelope.json.
func ReadEnvelope(dir string) (Envelope, error) {
	var e Envelope
	data, err := os.ReadFile(filepath.Join(dir, EnvelopeFile))
	if err == nil {
		err = json.Unmarshal(data, &e)
	}
	if err != nil {
		return e, fmt.Errorf("read envelope: %w", err)
	}
	e.Dir = dir
	return e, nil
}

// faultClass is the kind of fault a sweep of vary grows: pause, delay,
// clock or clock rate. A lock-delay sweep grows a pause.
func faultClass(vary string) string {
	switch vary {
	case "lockdelay":
		return "pause"
	case "rate":
		return "clock rate"
	}
	return vary
}

// label formats a magnitude in the sweep's unit.
func (e Envelope) label(m float64) string {
	s := strconv.FormatFloat(math.Round(m*1000)/1000, 'f', -1, 64)
	if e.Plan.Unit == "rate" {
		return "rate " + s
	}
	return s + "×TTL"
}

func (e Envelope) point(m *float64) (EnvelopePoint, bool) {
	if m == nil {
		return EnvelopePoint{}, false
	}
	for _, p := range e.Points {
		if p.Magnitude == *m {
			return p, true
		}
	}
	return EnvelopePoint{}, false
}

// Survived says, in a few words, the largest fault the design survived:
// "≤ 0.95×TTL" with the smallest that broke it, "≥ 4×TTL" when nothing
// in the sweep's range did, "< 0.25×TTL" when its smallest already did.
func (e Envelope) Survived() (headline, detail string) {
	o := e.Outcome
	seeds := func(m *float64) string {
		p, ok := e.point(m)
		if !ok {
			return ""
		}
		return fmt.Sprintf(" (%d/%d seeds lost updates)", p.Unsafe, len(p.Runs))
	}
	// The edge between the two: how each side's seeds went.
	between := func() string {
		return "safe at " + e.label(*o.Safe) + seeds(o.Safe) + ", unsafe at " + e.label(*o.Unsafe) + seeds(o.Unsafe)
	}
	switch {
	case e.Interrupted:
		return "interrupted", "the sweep was stopped before it concluded"
	case o.Finding == "boundary" && o.Safe != nil && o.Unsafe != nil:
		if !o.Converged {
			// The point budget ran out: the edge is somewhere in between.
			return e.label(*o.Safe) + " – " + e.label(*o.Unsafe), between()
		}
		return "≤ " + e.label(*o.Safe), between()
	case o.Finding == "none" && o.Safe != nil:
		return "≥ " + e.label(*o.Safe), "no update lost up to " + e.label(*o.Safe) + seeds(o.Safe) + ", the largest tried"
	case o.Finding == "below" && o.Unsafe != nil:
		return "< " + e.label(*o.Unsafe), "unsafe already at " + e.label(*o.Unsafe) + seeds(o.Unsafe) + ", the smallest tried"
	}
	for _, p := range e.Points {
		if p.State == "unknown" {
			return "unknown", fmt.Sprintf("no answer at %s: %d of %d seeds gave none (%s)", e.label(p.Magnitude), p.Unfair, len(p.Runs), p.why())
		}
	}
	return "unknown", "the sweep did not conclude"
}

// why says why a point's first unanswered seed gave no answer.
func (p EnvelopePoint) why() string {
	for _, raw := range p.Runs {
		var r struct {
			Verdict string `json:"verdict"`
			Strikes int    `json:"strikes"`
			Error   string `json:"error"`
		}
		if json.Unmarshal(raw, &r) != nil {
			continue
		}
		switch {
		case r.Error != "":
			return r.Error
		case r.Strikes == 0:
			return "the fault never struck"
		case r.Verdict != "valid" && r.Verdict != "invalid":
			return "the run's verdict was " + r.Verdict + ": its summary says why"
		}
	}
	return "no run said why"
}

// Outcome is the sweep's verdict at the largest magnitude it tried.
func (e Envelope) outcome() Outcome {
	switch e.Outcome.Finding {
	case "none":
		return Safe
	case "boundary", "below":
		return Unsafe
	}
	return Undecided
}

// EnvelopeColumn is a fault swept by one kind of size with the same
// settings: sweeps in one column are compared like with like.
type EnvelopeColumn struct {
	Fault string `json:"fault"`
	// Vary is the kind of size: pause, delay, clock or clock rate.
	Vary string `json:"vary"`
	// Settings are the sweeps' TTL, clients, workload and server
	// timeouts, said when the column's fault was swept with other
	// settings too.
	Settings string `json:"settings,omitempty"`
	key      string
}

// String is the column's heading: "pause (pause-holder)".
func (c EnvelopeColumn) String() string {
	s := faultClass(c.Vary) + " (" + c.Fault + ")"
	if c.Settings != "" {
		s += " [" + c.Settings + "]"
	}
	return s
}

// envelopeSettings are the settings two sweeps must share to sit in one
// column: the rest is fixed by the plan of the fault and magnitude. A
// session lock's boundary under a partition moves with the servers'
// timeouts, so sweeps under other timeouts sit apart.
func (e Envelope) settings() string {
	s := fmt.Sprintf("ttl=%s, clients=%d, %s", e.TTL, e.Clients, e.Workload)
	for _, t := range e.ServerTimeouts {
		s += ", " + t
	}
	return s
}

// Envelopes is the headline of a comparison: for each design and each
// fault swept, the largest fault it survived.
type Envelopes struct {
	Designs []string         `json:"designs"`
	Columns []EnvelopeColumn `json:"columns"`
	Sweeps  []Envelope       `json:"sweeps"`
	// Notes say which older sweeps a newer one of the same design, fault
	// and settings replaced.
	Notes []string `json:"notes,omitempty"`
}

// NewEnvelopes groups sweeps into columns by fault, magnitude and
// settings, keeping the newest sweep of each design in a column.
func NewEnvelopes(sweeps []Envelope) Envelopes {
	var t Envelopes
	perFault := map[string][]string{}
	for _, e := range sweeps {
		k := e.faultKey()
		if !slices.Contains(perFault[k], e.settings()) {
			perFault[k] = append(perFault[k], e.settings())
		}
	}
	type cellKey struct{ design, column string }
	newest := map[cellKey]int{}
	for _, e := range sweeps {
		col := EnvelopeColumn{Fault: e.Plan.Fault, Vary: faultClass(e.Plan.Vary), key: e.columnKey()}
		if len(perFault[e.faultKey()]) > 1 {
			col.Settings = e.settings()
		}
		if !slices.ContainsFunc(t.Columns, func(c EnvelopeColumn) bool { return c.key == col.key }) {
			t.Columns = append(t.Columns, col)
		}
		if !slices.Contains(t.Designs, e.Impl) {
			t.Designs = append(t.Designs, e.Impl)
		}
		k := cellKey{e.Impl, col.key}
		if i, ok := newest[k]; ok {
			old := t.Sweeps[i]
			if e.Started.After(old.Started) || (e.Started.Equal(old.Started) && filepath.Base(e.Dir) > filepath.Base(old.Dir)) {
				old, t.Sweeps[i] = e, e
			}
			t.Notes = append(t.Notes, fmt.Sprintf("%s under %s was swept more than once; the newest sweep is shown, not %s", e.Impl, col, old.Dir))
			continue
		}
		newest[k] = len(t.Sweeps)
		t.Sweeps = append(t.Sweeps, e)
	}
	sort.Strings(t.Designs)
	// Pauses, then delays, then clocks: the order the argument goes in.
	order := []string{"pause", "delay", "clock", "clock rate"}
	sort.Slice(t.Columns, func(i, j int) bool {
		a, b := t.Columns[i], t.Columns[j]
		if ca, cb := slices.Index(order, a.Vary), slices.Index(order, b.Vary); ca != cb {
			return ca < cb
		}
		return a.key < b.key
	})
	return t
}

// faultKey is the fault a sweep grew and the kind of size: a lock-delay
// sweep grows a pause like any other, and sits in the same column.
func (e Envelope) faultKey() string { return e.Plan.Fault + "/" + faultClass(e.Plan.Vary) }

// columnKey adds the settings sweeps must share to be compared.
func (e Envelope) columnKey() string { return e.faultKey() + "/" + e.settings() }

// Sweep returns a design's sweep in a column.
func (t Envelopes) Sweep(design string, col EnvelopeColumn) (Envelope, bool) {
	for _, e := range t.Sweeps {
		if e.Impl == design && e.columnKey() == col.key {
			return e, true
		}
	}
	return Envelope{}, false
}

// envelopeLegend explains the headline table, under every format's table.
const envelopeLegend = "Each cell: the largest fault the design survived without losing an update (≤; a range a – b when the " +
	"sweep ran out of points before narrowing it), found by bisecting " +
	"the fault's size between the smallest and largest tried, with every strike placed just after a grant so that " +
	"its size decides; then the sizes that were safe and unsafe, and how many seeds of each lost updates. " +
	"≥ means nothing in the range broke it (not a proof beyond it); < means the smallest size tried already did. " +
	"Sizes are multiples of the TTL: a pause's length, a delay, a clock's jump forward. On the chart (dashed: the " +
	"lease, 1×TTL) each design's curve is lifted a hair above the previous one so that equal curves stay visible."

// Markdown writes the headline table: designs × faults swept, each cell
// the largest fault survived.
func (t Envelopes) Markdown(w io.Writer) {
	if len(t.Sweeps) == 0 {
		return
	}
	fmt.Fprintf(w, "## How big a fault each design survives\n\n")
	heads := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		heads[i] = c.String()
	}
	markdownTable(w, t.Designs, heads, func(design string, i int) string {
		e, ok := t.Sweep(design, t.Columns[i])
		if !ok {
			return "—"
		}
		head, detail := e.Survived()
		return fmt.Sprintf("%s **%s**<br>%s", outcomeMark[e.outcome()], mdText(head), mdText(detail))
	})
	fmt.Fprintln(w, "\n"+envelopeLegend)
	for _, n := range t.Notes {
		fmt.Fprintf(w, "\n> %s\n", mdText(n))
	}
	fmt.Fprintln(w)
}

// curveColor is the one color of every curve: each panel holds one, and
// red is reserved for overlapping holders.
var curveColor = color.RGBA{R: 31, G: 119, B: 180, A: 255}

// Geometry of the curves chart, in px: small multiples, a panel per design
// and column, at most curvesPerRow side by side, so that it fits a laptop
// screen and no curve hides another.
const (
	curvesPanelW = 330.0
	curvesPanelH = 230.0
	curvesPerRow = 4
)

// Chart draws every sweep's curve, the share of seeds that lost an update
// against the fault's size, in a panel of its own (design and column in
// its title), the lease marked where the size is in TTLs. The values are
// drawn as measured: a safe design lies on 0. It returns the PNG and its
// size in CSS pixels.
func (t Envelopes) Chart() ([]byte, int, int, error) {
	if len(t.Sweeps) == 0 {
		return nil, 0, 0, nil
	}
	var panels []*figure
	for _, col := range t.Columns {
		for _, d := range t.Designs {
			e, ok := t.Sweep(d, col)
			if !ok {
				continue
			}
			f := newFigure(d+" · "+col.String(), "share of seeds unsafe", curvesPanelW, curvesPanelH, 0)
			f.p.X.Tick.Marker = plot.DefaultTicks{}
			f.p.Y.Min, f.p.Y.Max = 0, 1.05
			f.p.X.Label.Text = "size, in TTLs"
			if e.Plan.Unit == "rate" {
				f.p.X.Label.Text = "clock rate (1 = true speed)"
			} else {
				lease, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: f.p.Y.Min}, {X: 1, Y: f.p.Y.Max}})
				lease.Color, lease.Width, lease.Dashes = color.Gray{Y: 120}, vg.Points(1), []vg.Length{px(5), px(4)}
				f.p.Add(lease)
			}
			pts := slices.Clone(e.Points)
			sort.Slice(pts, func(a, b int) bool { return pts[a].Magnitude < pts[b].Magnitude })
			var xys plotter.XYs
			for _, p := range pts {
				xys = append(xys, plotter.XY{X: p.Magnitude, Y: float64(p.Unsafe) / float64(max(1, len(p.Runs)))})
			}
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("envelope chart: %w", err)
			}
			l.Color, l.Width = curveColor, vg.Points(1.5)
			sc.GlyphStyle = draw.GlyphStyle{Color: curveColor, Radius: px(3.5), Shape: draw.CircleGlyph{}}
			f.p.Add(l, sc)
			panels = append(panels, f)
		}
	}
	cols := min(len(panels), curvesPerRow)
	rows := (len(panels) + cols - 1) / cols
	width, height := curvesPanelW*float64(cols), curvesPanelH*float64(rows)
	cv := vgimg.NewWith(vgimg.UseWH(px(width), px(height)), vgimg.UseDPI(dpi*pngScale))
	dc := draw.New(cv)
	dc.FillPolygon(color.White, box(0, px(width), 0, px(height)))
	for i, f := range panels {
		x0, top := curvesPanelW*float64(i%cols), curvesPanelH*float64(i/cols)
		f.p.Draw(draw.Canvas{Canvas: cv, Rectangle: vg.Rectangle{
			Min: vg.Point{X: px(x0), Y: px(height - top - curvesPanelH)},
			Max: vg.Point{X: px(x0 + curvesPanelW), Y: px(height - top)}}})
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
		return nil, 0, 0, fmt.Errorf("envelope chart: %w", err)
	}
	return buf.Bytes(), int(width), int(height), nil
}

// Compare reads every run and every sweep under paths and builds their
// comparison, runs grouped by settings (see NewMatrix); latest keeps only
// the newest run of each scenario. It wraps ErrNoRuns when paths hold
// neither.
func Compare(paths []string, settings []Setting, latest bool) (Matrix, error) {
	runs, notes, err := LoadRuns(paths)
	if err != nil && !errors.Is(err, ErrNoRuns) {
		return Matrix{}, err
	}
	sweeps, serr := LoadEnvelopes(paths)
	if serr != nil {
		return Matrix{}, serr
	}
	if len(runs) == 0 && len(sweeps) == 0 {
		return Matrix{}, err
	}
	if latest {
		runs = Latest(runs)
	}
	m := NewMatrix(runs, settings)
	m.Notes = notes
	m.Envelopes = NewEnvelopes(sweeps)
	return m, nil
}

// LoadEnvelopes reads every sweep under paths: a directory holding
// envelope.json, or any directory above such.
func LoadEnvelopes(paths []string) ([]Envelope, error) {
	var out []Envelope
	seen := map[string]bool{}
	for _, p := range paths {
		root, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("read envelopes: %w", err)
		}
		err = filepath.WalkDir(root, func(dir string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if _, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil {
				return filepath.SkipDir // a run: no sweep below
			}
			if _, err := os.Stat(filepath.Join(dir, EnvelopeFile)); err != nil || seen[dir] {
				return nil
			}
			seen[dir] = true
			e, err := ReadEnvelope(dir)
			if err != nil {
				return err
			}
			out = append(out, e)
			return filepath.SkipDir
		})
		if err != nil {
			return nil, fmt.Errorf("read envelopes: %w", err)
		}
	}
	return out, nil
}
