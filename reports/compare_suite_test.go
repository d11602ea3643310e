package reports_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// storeRun writes a run directory the way a suite leaves it,
// <out>/runs/<scenario>/<time>/ with config.json and results.json.
func storeRun(t *testing.T, out string, cfg scenario.Config, start string, v checker.Verdict, p99 float64) {
	t.Helper()
	dir := filepath.Join(out, "runs", cfg.Scenario, start)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := reports.Results{Scenario: cfg.Scenario, Impl: cfg.Impl, Workload: cfg.Workload, Faults: cfg.Faults,
		Seed: cfg.Seed, Clients: cfg.Clients, Command: cfg.Command(), Config: cfg, Dir: dir, Verdict: v,
		DecidedBy: checker.ResourceCheck}
	r.Checks.Resource.Verdict = v
	r.Metrics.AcquireP99Ms = p99
	for name, x := range map[string]any{scenario.ConfigFile: cfg, reports.ResultsFile: r} {
		data, err := json.MarshalIndent(x, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompareSuiteKeepsSettingsApart: a suite with two scenarios of the
// same design and fault that differ in a setting (redis-single under
// kill-node, with and without persistence) compares as two cells, each
// with its own verdict; seeds, scenario names and check timeouts do not
// set runs apart.
func TestCompareSuiteKeepsSettingsApart(t *testing.T) {
	out := t.TempDir()
	cfg := scenario.Defaults()
	cfg.Impl, cfg.Faults, cfg.TTL = "redis-single", []string{"kill-node"}, scenario.Duration(5*time.Second)
	cfg.HoldMin, cfg.HoldMax = scenario.Duration(time.Second), scenario.Duration(1500*time.Millisecond)
	// The same scenario under two names, seeds and check timeouts.
	for seed, p99 := range map[int64]float64{1: 100, 2: 300} {
		cfg.Scenario = fmt.Sprintf("redis-single-kill-node-%d", seed)
		cfg.Seed, cfg.CheckTimeout = seed, scenario.Duration(time.Duration(seed)*time.Minute)
		storeRun(t, out, cfg, fmt.Sprintf("20260101T00000%d.000", seed), checker.Invalid, p99)
	}
	cfg.Scenario, cfg.Persist, cfg.Seed = "redis-single-kill-node-persist", true, 1
	storeRun(t, out, cfg, "20260101T000003.000", checker.Valid, 20)

	runs, _, err := reports.LoadRuns([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	m := reports.NewMatrix(runs, scenario.ComparedSettings())
	if len(m.Cells) != 2 {
		t.Fatalf("%d cells, want 2 (kill-node with and without persist): %+v", len(m.Cells), m.Cells)
	}
	cases := []struct {
		column   reports.Column
		runs     int
		want     reports.Outcome
		p99      float64
		rateLine string
	}{
		{reports.Column{Fault: "kill-node"}, 2, reports.Unsafe, 200, "2/2 runs unsafe, 95% CI 34–100%"},
		{reports.Column{Fault: "kill-node", Variant: "persist"}, 1, reports.Safe, 20, "0/1 runs unsafe, 95% CI 0–79%"},
	}
	for _, tc := range cases {
		c, ok := m.Cell("redis-single", tc.column)
		if !ok {
			t.Fatalf("no cell redis-single × %s among %v", tc.column, m.Columns)
		}
		if c.Runs != tc.runs || c.Outcome != tc.want || c.AcquireP99Ms != tc.p99 || c.Lines()[1] != tc.rateLine {
			t.Errorf("%s: %d runs, %s, p99 %g, %q; want %d, %s, %g, %q", tc.column, c.Runs, c.Outcome, c.AcquireP99Ms,
				c.Lines()[1], tc.runs, tc.want, tc.p99, tc.rateLine)
		}
	}
	var md strings.Builder
	m.Markdown(&md)
	if !strings.Contains(md.String(), "| design \\ fault | kill-node | kill-node (persist) |") {
		t.Errorf("markdown heads:\n%s", md.String())
	}
}
