package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/russross/blackfriday/v2"

	"github.com/locktest/locktest/checker"
)

func run(impl, fault string, v checker.Verdict, lost int, first *float64, p99 float64, rec ...*float64) Results {
	r := Results{Scenario: impl + "_counter_" + fault, Impl: impl, Workload: "counter", Faults: []string{fault},
		Verdict: v, DecidedBy: checker.ResourceCheck, Command: "locktest run --impl " + impl + " --fault " + fault,
		Dir: fmt.Sprintf("/store/%s/%s/%g", impl, fault, p99)}
	r.Checks.Resource.Verdict = v
	r.Checks.Resource.FirstViolationS = first
	r.Checks.Mutex.Verdict = v
	r.Checks.Stats.Lost = lost
	r.Metrics.AcquireP99Ms, r.Metrics.AcquireP50Ms, r.Metrics.Throughput, r.Metrics.CommandsPerAcquisition = p99, 0.1, 20, 6
	for _, x := range rec {
		r.Metrics.Recoveries = append(r.Metrics.Recoveries, checker.Recovery{Fault: fault, NextAcquireMs: x})
	}
	return r
}

func ptr(f float64) *float64 { return &f }

func TestNewMatrix(t *testing.T) {
	runs := []Results{
		run("redis-single", "pause-holder", checker.Invalid, 3, ptr(4.5), 3000, ptr(1000), nil),
		run("redis-single", "pause-holder", checker.Valid, 0, nil, 10, ptr(1200)),
		run("redis-single", "pause-holder", checker.Invalid, 2, ptr(2.5), 2000, ptr(1100)),
		run("redis-single", "none", checker.Valid, 0, nil, 1),
		run("zk", "none", checker.Unknown, 0, nil, 1),
	}
	m := NewMatrix(runs, testSettings)
	if strings.Join(m.Designs, ",") != "redis-single,zk" || fmt.Sprint(m.Columns) != "[none pause-holder]" {
		t.Fatalf("designs %v columns %v", m.Designs, m.Columns)
	}
	cases := []struct {
		design, fault string
		want          Outcome
		runs, lost    int
		first         float64 // 0: none
		p99           float64
		recovery      float64 // 0: none
		never         int
	}{
		{"redis-single", "pause-holder", Unsafe, 3, 5, 2.5, 2000, 1100, 1},
		{"redis-single", "none", Safe, 1, 0, 0, 1, 0, 0},
		{"zk", "none", Undecided, 1, 0, 0, 1, 0, 0},
	}
	for _, tc := range cases {
		c, ok := m.Cell(tc.design, Column{Fault: tc.fault})
		if !ok {
			t.Fatalf("no cell %s/%s", tc.design, tc.fault)
		}
		if c.Outcome != tc.want || c.Runs != tc.runs || c.LostUpdates != tc.lost || c.AcquireP99Ms != tc.p99 {
			t.Errorf("%s/%s: %+v", tc.design, tc.fault, c)
		}
		if (c.FirstViolationS == nil) != (tc.first == 0) || (c.FirstViolationS != nil && *c.FirstViolationS != tc.first) {
			t.Errorf("%s/%s: first violation %v, want %v", tc.design, tc.fault, c.FirstViolationS, tc.first)
		}
		if (c.RecoveryMs == nil) != (tc.recovery == 0) || (c.RecoveryMs != nil && *c.RecoveryMs != tc.recovery) || c.RecoveryNever != tc.never {
			t.Errorf("%s/%s: recovery %v never %d, want %v %d", tc.design, tc.fault, c.RecoveryMs, c.RecoveryNever, tc.recovery, tc.never)
		}
	}
	if c, _ := m.Cell("redis-single", Column{Fault: "pause-holder"}); !strings.Contains(c.Command, "pause-holder") || c.Unsafe != 2 {
		t.Errorf("unsafe cell: command %q, %d unsafe runs", c.Command, c.Unsafe)
	}
	if _, ok := m.Cell("zk", Column{Fault: "pause-holder"}); ok {
		t.Error("a cell for a combination never run")
	}

	var md bytes.Buffer
	m.Markdown(&md)
	for _, want := range []string{
		"| design \\ fault | none | pause-holder |",
		"| **zk** | ❔ **unknown**",
		"❌ **unsafe**<br>2/3 runs unsafe, 95% CI 21–94%<br>5 lost, first at 2.5 s",
		"❔ **unknown**<br>no run decided, 1 unknown",
		"| — |",
		"`locktest run --impl redis-single --fault pause-holder`",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestLoadRuns(t *testing.T) {
	store := t.TempDir()
	write := func(rel string, name string, data []byte) {
		dir := filepath.Join(store, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, _ := json.Marshal(run("redis-single", "none", checker.Valid, 0, nil, 1))
	write("redis-single_counter_none/20260101T000000.000", ResultsFile, res)
	write("redis-single_counter_none/20260101T000000.000/nodes/redis", ResultsFile, res) // inside a run: not a run
	write("redis-single_counter_none/20260102T000000.000", HistoryFile, []byte("{}\n"))
	if err := os.Symlink("20260101T000000.000", filepath.Join(store, "redis-single_counter_none", "latest")); err != nil {
		t.Fatal(err)
	}
	runs, notes, err := LoadRuns([]string{store})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || !strings.HasSuffix(runs[0].Dir, "20260101T000000.000") {
		t.Fatalf("runs %+v, want the one run, found where it lies", runs)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "locktest analyze") {
		t.Fatalf("notes %v, want the killed run named", notes)
	}
	// A run directory given directly, and through its latest link.
	runs, _, err = LoadRuns([]string{filepath.Join(store, "redis-single_counter_none", "latest")})
	if err != nil || len(runs) != 1 {
		t.Fatalf("through latest: %v %v", runs, err)
	}
	if _, _, err := LoadRuns([]string{t.TempDir()}); err == nil {
		t.Fatal("an empty directory gave no error")
	}
}

// testSettings stand for scenario.ComparedSettings, which this package
// cannot import; compare_stored_test.go uses the real ones.
var testSettings = []Setting{
	{Name: "ttl", Flag: "ttl"}, {Name: "retry_min", Flag: "retry-min"},
	{Name: "hold_min", Flag: "hold-min"}, {Name: "hold_max", Flag: "hold-max"}, {Name: "persist", Flag: "persist"},
}

func TestWilson(t *testing.T) {
	// Textbook values of the 95% Wilson score interval, to 4 places.
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 0, 0, 1},
		{0, 1, 0, 0.7935},
		{1, 1, 0.2065, 1},
		{1, 2, 0.0945, 0.9055},
		{5, 10, 0.2366, 0.7634},
		{10, 10, 0.7225, 1},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
		{15, 148, 0.0624, 0.1605},
		{81, 263, 0.2553, 0.3662},
	}
	for _, tc := range cases {
		lo, hi := wilson(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 5e-5 || math.Abs(hi-tc.hi) > 5e-5 {
			t.Errorf("wilson(%d, %d) = %.4f–%.4f, want %.4f–%.4f", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestVariant(t *testing.T) {
	// values are in testSettings order: ttl, retry_min, hold_min, hold_max, persist.
	cases := []struct {
		name   string
		values [][]string
		want   []string
	}{
		{"one group", [][]string{{"1s", "20ms", "1s", "1.5s", ""}}, []string{""}},
		{"a flag", [][]string{{"5s", "20ms", "1s", "1.5s", ""}, {"5s", "20ms", "1s", "1.5s", "true"}}, []string{"", "persist"}},
		{"ttl and hold", [][]string{{"1s", "20ms", "20ms", "60ms", ""}, {"2s", "20ms", "1.5s", "1.8s", ""}},
			[]string{"ttl=1s, hold=20ms–60ms", "ttl=2s, hold=1.5s–1.8s"}},
		{"hold max alone", [][]string{{"1s", "20ms", "1s", "1s", ""}, {"1s", "20ms", "1s", "2s", ""}}, []string{"hold=1s", "hold=1s–2s"}},
		{"a min without its max", [][]string{{"1s", "20ms", "1s", "2s", ""}, {"1s", "50ms", "1s", "2s", ""}},
			[]string{"retry-min=20ms", "retry-min=50ms"}},
	}
	for _, tc := range cases {
		for i := range tc.values {
			if got := variant(testSettings, tc.values, i); got != tc.want[i] {
				t.Errorf("%s: group %d is %q, want %q", tc.name, i, got, tc.want[i])
			}
		}
	}
}

// TestNewMatrixKeepsSettingsApart: runs of one design under one fault
// with different settings are two cells, each with its own verdict and
// medians; runs that differ in nothing compared are one.
func TestNewMatrixKeepsSettingsApart(t *testing.T) {
	withConfig := func(r Results, cfg map[string]any) Results {
		r.Config = cfg
		return r
	}
	runs := []Results{
		withConfig(run("redis-single", "kill-node", checker.Invalid, 4, ptr(3), 100), map[string]any{"ttl": "5s"}),
		withConfig(run("redis-single", "kill-node", checker.Invalid, 2, ptr(2), 300), map[string]any{"ttl": "5s", "persist": false}),
		withConfig(run("redis-single", "kill-node", checker.Valid, 0, nil, 20), map[string]any{"ttl": "5s", "persist": true}),
		withConfig(run("redis-single", "none", checker.Valid, 0, nil, 1), map[string]any{"ttl": "5s"}),
		withConfig(run("redlock", "kill-node", checker.Valid, 0, nil, 7), map[string]any{"ttl": "1s"}),
	}
	m := NewMatrix(runs, testSettings)
	if got := fmt.Sprint(m.Columns); got != "[none kill-node kill-node (persist)]" {
		t.Fatalf("columns %s", got)
	}
	plain, ok := m.Cell("redis-single", Column{Fault: "kill-node"})
	if !ok || plain.Outcome != Unsafe || plain.Runs != 2 || plain.AcquireP99Ms != 200 {
		t.Errorf("redis-single kill-node: %+v", plain)
	}
	persist, ok := m.Cell("redis-single", Column{Fault: "kill-node", Variant: "persist"})
	if !ok || persist.Outcome != Safe || persist.Runs != 1 || persist.AcquireP99Ms != 20 || persist.Settings["persist"] != "true" {
		t.Errorf("redis-single kill-node (persist): %+v", persist)
	}
	// redlock ran kill-node one way only: its column is the plain one.
	if c, ok := m.Cell("redlock", Column{Fault: "kill-node"}); !ok || c.Settings["ttl"] != "1s" {
		t.Errorf("redlock kill-node: %+v", c)
	}
}

func TestWrap(t *testing.T) {
	sty := chartStyle(chartLabel, true)
	cases := []struct {
		s     string
		width float64
		want  []string
	}{
		{"kill-node", 1000, []string{"kill-node"}},
		{"slow-resource-write", widthPx(sty, "slow-resource-"), []string{"slow-resource-", "write"}},
		{"redis-single-fenced (counter)", widthPx(sty, "redis-single-fenced"), []string{"redis-single-fenced", "(counter)"}},
		// A part wider than the width stands alone rather than being cut.
		{"redlock-clock-jump", 1, []string{"redlock-", "clock-", "jump"}},
	}
	for _, tc := range cases {
		if got := wrap(sty, tc.s, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("wrap(%q, %.0f) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}

// TestComparisonChartShownAtSize: compare.html shows the chart at its CSS
// size (the PNG is drawn at pngScale times it), so that text drawn at
// chartSmall px is that large on the page; a column is wide enough for
// the longest design label and every tile's text.
func TestComparisonChartShownAtSize(t *testing.T) {
	long := "a-design-with-a-rather-long-name"
	m := NewMatrix([]Results{
		run(long, "pause-holder", checker.Invalid, 3, ptr(4.5), 3000),
		run("redis-single", "none", checker.Valid, 0, nil, 1),
	}, testSettings)
	dir := t.TempDir()
	if err := WriteComparison(dir, m); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, ComparePNG))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, CompareHTML))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`width="%d" height="%d"`, img.Width/pngScale, img.Height/pngScale)
	if !strings.Contains(string(page), want) {
		t.Errorf("compare.html does not show the %dx%d chart at %s", img.Width, img.Height, want)
	}
	// The label and two tiles, side by side, fit in the chart.
	label := widthPx(chartStyle(chartLabel, true), long)
	tile := widthPx(chartStyle(chartSmall, false), "1/1 runs unsafe")
	if float64(img.Width)/pngScale < label+2*tile {
		t.Errorf("chart %d px wide at %dx: too narrow for a %.0f px label and two %.0f px tiles", img.Width, pngScale, label, tile)
	}
}

// TestMarkdownEscapesNames renders compare.md with a Markdown renderer that
// passes raw HTML through, as a CI job summary does, from runs whose names
// and command carry markup: it stays text, and the table keeps its shape.
func TestMarkdownEscapesNames(t *testing.T) {
	const markup = `<img src=x onerror=alert(1)>`
	hostile := run(markup+"|*x*", "pause-holder", checker.Invalid, 1, ptr(1), 10)
	hostile.Command = "locktest run --impl '" + markup + "' `x` ``y``"
	m := NewMatrix([]Results{hostile, run("redis-single", "pause-holder", checker.Valid, 0, nil, 10)}, testSettings)
	var md bytes.Buffer
	m.Markdown(&md)
	page := string(blackfriday.Run(md.Bytes()))
	if strings.Contains(page, "<img") || strings.Contains(page, "<em>") {
		t.Errorf("the design's name renders as markup:\n%s\nfrom\n%s", page, md.String())
	}
	if !strings.Contains(page, html.EscapeString(markup+"|*x*")) {
		t.Errorf("the design's name is not shown as text:\n%s\nfrom\n%s", page, md.String())
	}
	if !strings.Contains(page, "<code>"+strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(hostile.Command)+"</code>") {
		t.Errorf("the command is not one code span:\n%s\nfrom\n%s", page, md.String())
	}
	if rows := strings.Count(page, "<tr>"); rows != 3 {
		t.Errorf("the table has %d rows, want 3 (head and two designs):\n%s", rows, page)
	}
	if cells := strings.Count(page, "<td>"); cells != 4 {
		t.Errorf("the table has %d cells, want 4 (two designs × design and one fault):\n%s", cells, page)
	}
}

// TestCompareLinkStaysRelative: a run directory whose name looks like a
// URL scheme is linked as a relative path, not as a script URL.
func TestCompareLinkStaysRelative(t *testing.T) {
	p := comparePage{dir: "/store"}
	for target, want := range map[string]string{
		"/store/javascript:alert(1)/report.html": "./javascript:alert%281%29/report.html",
		"/store/a b/report.html":                 "a%20b/report.html",
		"/elsewhere/x/report.html":               "../elsewhere/x/report.html",
	} {
		if got := string(p.link(target)); got != want {
			t.Errorf("link(%q) = %q, want %q", target, got, want)
		}
	}
}

// TestNewMatrixNamesUserLocks: two programs run with --impl exec are two
// designs under the names the user gave them (--exec-name), and a design
// that reports no store commands shows "—", not a cost of zero.
func TestNewMatrixNamesUserLocks(t *testing.T) {
	named := func(name string, cmds float64) Results {
		r := run("exec", "none", checker.Valid, 0, nil, 1)
		r.Design, r.Metrics.CommandsPerAcquisition = name, cmds
		return r
	}
	m := NewMatrix([]Results{named("mylock", 0), named("theirlock", 4), run("exec", "none", checker.Valid, 0, nil, 1)}, testSettings)
	if got := strings.Join(m.Designs, ","); got != "exec,mylock,theirlock" {
		t.Fatalf("designs %s, want exec,mylock,theirlock", got)
	}
	for design, want := range map[string]string{"mylock": "20.0 acq/s, — cmds/acq", "theirlock": "20.0 acq/s, 4.0 cmds/acq"} {
		c, ok := m.Cell(design, Column{Fault: "none"})
		if !ok || !slices.Contains(c.Lines(), want) {
			t.Errorf("%s: %v, want a line %q", design, c.Lines(), want)
		}
	}
}

// TestEnvelopeChartSmallMultiples: the curves chart draws each design's
// sweep of each fault in a panel of its own, four to a row, as measured.
func TestEnvelopeChartSmallMultiples(t *testing.T) {
	sweep := func(impl, fault string, unsafe ...int) Envelope {
		e := Envelope{Impl: impl, Workload: "counter", TTL: "1s", Clients: 5,
			Plan: EnvelopePlan{Fault: fault, Vary: "pause", Unit: "TTL", Lo: 0.25, Hi: 4}}
		for i, u := range unsafe {
			e.Points = append(e.Points, EnvelopePoint{Magnitude: 0.25 + 0.75*float64(i), Unsafe: u,
				Runs: []json.RawMessage{json.RawMessage("{}"), json.RawMessage("{}")}})
		}
		return e
	}
	var sweeps []Envelope
	for _, f := range []string{"pause-holder", "slow-resource-write"} {
		sweeps = append(sweeps, sweep("redis-single", f, 0, 1, 2, 2), sweep("redis-single-fenced", f, 0, 0, 0, 0),
			sweep("redis-lockdelay", f, 0, 0, 2, 2))
	}
	png0, w, h, err := NewEnvelopes(sweeps).Chart()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(png0))
	if err != nil {
		t.Fatal(err)
	}
	if w != 4*curvesPanelW || h != 2*curvesPanelH || img.Bounds().Dx() < w {
		t.Fatalf("chart %d×%d (image %v), want 6 panels four to a row: %v×%v", w, h, img.Bounds(), 4*curvesPanelW, 2*curvesPanelH)
	}
}
