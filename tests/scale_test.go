package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/history/historytest"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// TestAnalyzeLongHistory analyzes a synthetic history too long to draw
// whole (no server): --no-report gives the verdict and writes nothing; the
// full analyze caps porcupine's pages and the timeline SVG and says so.
func TestAnalyzeLongHistory(t *testing.T) {
	dir := t.TempDir()
	cfg, err := os.ReadFile("../reports/testdata/run-60s-8c/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	g := historytest.Counter{Clients: 8, Keys: 1, Ops: 90_000, Overlaps: 2, Seed: 1}
	if err := g.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	r := locktest(t, "analyze", "--no-report", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "INVALID") {
		t.Fatalf("analyze --no-report: exit %d, want 1 (invalid):\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, reports.ResultsFile)); !os.IsNotExist(err) {
		t.Fatalf("analyze --no-report wrote %s (%v)", reports.ResultsFile, err)
	}

	r = locktest(t, "analyze", dir)
	if r.code != 1 {
		t.Fatalf("analyze: exit %d, want 1 (invalid):\n%s%s", r.code, r.stdout, r.stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stretch(es) where the check failed", "No " + reports.TimelineSVG} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html does not say %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, reports.TimelineSVG)); !os.IsNotExist(err) {
		t.Errorf("%s written for %d ops (%v)", reports.TimelineSVG, g.Ops, err)
	}
	for _, viz := range []string{reports.MutexViz, reports.ResourceViz} {
		info, err := os.Stat(filepath.Join(dir, viz))
		if err != nil || info.Size() > 2<<20 {
			t.Errorf("%s: %v, size over 2 MB: the failing stretches alone should be drawn", viz, err)
		}
	}
}
