package envelope

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// sweepOf builds the report of a sweep whose runs lose an update from
// boundary up, without running anything.
func sweepOf(t *testing.T, boundary float64) *Report {
	t.Helper()
	plan := NewPlan("pause-holder", faults.VaryPause, impls.Design{Name: "redis-single"})
	rep := &Report{Impl: "redis-single", Workload: "counter", TTL: scenario.Duration(1e9), Clients: 5,
		Seeds: []int64{1, 2, 3}, Plan: plan, References: plan.References(), Dir: t.TempDir()}
	var err error
	rep.Outcome, err = Search{Lo: plan.Lo, Hi: plan.Hi, Tol: plan.Tol, MaxPoints: 8}.Run(func(m float64) State {
		pt := Point{N: len(rep.Points) + 1, Magnitude: m}
		for i, s := range rep.Seeds {
			v := checker.Valid
			if m >= boundary && (m > boundary+0.2 || i == 0) {
				v = checker.Invalid
			}
			pt.Runs = append(pt.Runs, Run{Seed: s, Verdict: v, Strikes: 2})
		}
		pt.judge()
		rep.Points = append(rep.Points, pt)
		return pt.State
	})
	if err != nil {
		t.Fatal(err)
	}
	rep.Runs = 3 * len(rep.Points)
	return rep
}

func TestWriteReport(t *testing.T) {
	rep := sweepOf(t, 1.05)
	if err := write(rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(rep.Dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Outcome.Finding != FoundBoundary || len(back.Points) != len(rep.Points) || *back.Outcome.Unsafe != *rep.Outcome.Unsafe {
		t.Errorf("envelope.json does not hold the sweep: %+v", back.Outcome)
	}
	f, err := os.Open(filepath.Join(rep.Dir, PNGFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("envelope.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
		t.Errorf("envelope.png is %v, too small to read", b)
	}
	svg, err := os.ReadFile(filepath.Join(rep.Dir, SVGFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("Sans")) || bytes.Contains(svg, []byte("Serif")) {
		t.Error("envelope.svg is not set in the sans-serif face")
	}
	sum, err := os.ReadFile(filepath.Join(rep.Dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sum), "result    safe ≤ ") || !strings.Contains(string(sum), "unsafe ≥ ") {
		t.Errorf("summary has no bracket:\n%s", sum)
	}
}

func TestResultLines(t *testing.T) {
	for _, tt := range []struct {
		boundary float64
		want     string
	}{
		{1.05, "safe ≤ 1.013×TTL (0/3 seeds lost an update), unsafe ≥ 1.071×TTL (1/3 seeds lost an update)"},
		{100, "no boundary up to 4×TTL: 4×TTL (0/3 seeds lost an update)"},
		{0, "unsafe already at 0.25×TTL (3/3 seeds lost an update): the boundary lies below the bracket"},
	} {
		if got := sweepOf(t, tt.boundary).Result(); got != tt.want {
			t.Errorf("boundary %g:\n got %s\nwant %s", tt.boundary, got, tt.want)
		}
	}
}

// storeSweeps writes each sweep's files into a store of its own and reads
// them back as a comparison does.
func storeSweeps(t *testing.T, store string, sweeps ...*Report) []reports.Envelope {
	t.Helper()
	for i, rep := range sweeps {
		rep.Dir = filepath.Join(store, "envelopes", rep.Impl, "2026112"+string(rune('0'+i)))
		if err := os.MkdirAll(rep.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := write(rep); err != nil {
			t.Fatal(err)
		}
	}
	envs, err := reports.LoadEnvelopes([]string{store})
	if err != nil {
		t.Fatal(err)
	}
	return envs
}

// A comparison reads the sweep's envelope.json through reports, which
// cannot import this package: the two must agree on the file.
func TestComparisonReadsSweep(t *testing.T) {
	store := t.TempDir()
	unsafe, safe := sweepOf(t, 1.05), sweepOf(t, 9)
	safe.Impl = "redis-single-fenced"
	envs := storeSweeps(t, store, unsafe, safe)
	tab := reports.NewEnvelopes(envs)
	if len(tab.Columns) != 1 || len(tab.Designs) != 2 {
		t.Fatalf("want one column (pause-holder) and two designs, got %+v", tab)
	}
	var md strings.Builder
	tab.Markdown(&md)
	for _, want := range []string{"pause (pause-holder)", "**≤ 1.013×TTL**", "unsafe at 1.071×TTL (1/3 seeds lost updates)",
		"**≥ 4×TTL**", "no update lost up to 4×TTL (0/3 seeds lost updates)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("headline lacks %q:\n%s", want, md.String())
		}
	}
	m := reports.NewMatrix(nil, nil)
	m.Envelopes = tab
	out := t.TempDir()
	if err := reports.WriteComparison(out, m); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, reports.CompareHTML))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("How big a fault each design survives")) || bytes.Contains(page, []byte("%!")) {
		t.Errorf("compare.html lacks the headline or holds format garbage")
	}
	f, err := os.Open(filepath.Join(out, reports.EnvelopesPNG))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("envelopes.png: %v", err)
	}
}

// TestSweepsUnderOtherTimeouts: a boundary holds under the servers'
// timeouts it was found with, so a comparison keeps sweeps under other
// timeouts in columns of their own, headed by them, and a sweep's
// summary says them (server default when unset).
func TestSweepsUnderOtherTimeouts(t *testing.T) {
	store := t.TempDir()
	defaults, keepalive := sweepOf(t, 1.05), sweepOf(t, 2)
	keepalive.ServerTimeouts = []string{"server_keepalive=4s"}
	envs := storeSweeps(t, store, defaults, keepalive)
	tab := reports.NewEnvelopes(envs)
	if len(tab.Columns) != 2 || len(tab.Sweeps) != 2 {
		t.Fatalf("want two columns, one sweep each: %+v", tab.Columns)
	}
	if h := tab.Columns[1].String(); !strings.HasSuffix(h, ", server_keepalive=4s]") {
		t.Errorf("column heading %q does not name the timeout", h)
	}
	for _, tc := range []struct {
		rep  *Report
		want string
	}{{defaults, "timeouts  servers: server default\n"}, {keepalive, "timeouts  servers: server_keepalive=4s\n"}} {
		var sum strings.Builder
		Print(&sum, tc.rep)
		if !strings.Contains(sum.String(), tc.want) {
			t.Errorf("summary lacks %q:\n%s", tc.want, sum.String())
		}
	}
}
