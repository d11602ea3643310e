package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/reports"
)

// TestCompareCampaign runs a tiny comparison campaign, a matrix and
// envelopes with the same settings, through locktest compare --run: the
// comparison's headline must be the envelopes (the unfenced lock breaks
// between the smallest and largest pause, the fenced one never), above the
// matrix with k/N and intervals, and compare.html must render cleanly.
func TestCompareCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and worker processes")
	}
	file, out := writeSuite(t, `name: tiny-compare
defaults:
  clients: 3
  ttl: 500ms
  duration: 4s
  fault_interval: 1s
  seeds: [1]
matrix:
  designs: [redis-single, redis-single-fenced]
  faults: [pause-holder]
  expect: any
envelopes:
  designs: [redis-single, redis-single-fenced]
  faults: [pause-holder]
  duration: 4s
  seeds: 1
  points: 2
`)
	r := locktestIn(t, filepath.Join(t.TempDir(), "store"), "compare", "--run", file, "--out", out)
	if r.code != 0 {
		t.Fatalf("compare --run: exit %d", r.code)
	}
	assertNothingLeft(t, out, binary)
	head := strings.Index(r.stdout, "How big a fault each design survives")
	matrix := strings.Index(r.stdout, "design(s) × 1 fault column(s)")
	if head < 0 || matrix < head {
		t.Fatalf("stdout lacks the envelopes headline above the matrix:\n%s", r.stdout)
	}
	var m reports.Matrix
	data, err := os.ReadFile(filepath.Join(out, reports.CompareJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Envelopes.Sweeps) != 2 || len(m.Envelopes.Columns) != 1 {
		t.Fatalf("want 2 sweeps in one column, got %+v", m.Envelopes)
	}
	want := map[string]string{"redis-single": "boundary", "redis-single-fenced": "none"}
	for _, e := range m.Envelopes.Sweeps {
		if e.Outcome.Finding != want[e.Impl] || e.TTL != "500ms" || e.Clients != 3 {
			t.Errorf("%s: finding %s (want %s), ttl %s, clients %d", e.Impl, e.Outcome.Finding, want[e.Impl], e.TTL, e.Clients)
		}
	}
	// The sweeps' own runs, tuned per point, are no cell of the matrix.
	if len(m.Cells) != 2 || len(m.Columns) != 1 {
		t.Fatalf("the matrix holds more than the campaign's two cells: %+v", m.Columns)
	}
	for _, c := range m.Cells {
		if c.Runs != 1 || !strings.Contains(strings.Join(c.Lines(), " "), "/1 runs unsafe, 95% CI") {
			t.Errorf("%s: %d runs, %q", c.Design, c.Runs, c.Lines())
		}
	}
	page := filepath.Join(out, reports.CompareHTML)
	if dom := dumpDOM(t, page); strings.Contains(dom, "%!") || !strings.Contains(dom, "≥ 4×TTL") {
		t.Errorf("compare.html as rendered holds format garbage or lacks the fenced design's envelope")
	}
	if st := pixelStats(screenshot(t, page, 1366, 1400)); st.colors < 20 || st.inked < 0.05 {
		t.Fatalf("compare.html screenshot looks blank: %+v", st)
	}
}
