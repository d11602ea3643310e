package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	m := NewMatrix(runs)
	if strings.Join(m.Designs, ",") != "redis-single,zk" || strings.Join(m.Faults, ",") != "none,pause-holder" {
		t.Fatalf("designs %v faults %v", m.Designs, m.Faults)
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
		c, ok := m.Cell(tc.design, tc.fault)
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
	if c, _ := m.Cell("redis-single", "pause-holder"); !strings.Contains(c.Command, "pause-holder") || c.Unsafe != 2 {
		t.Errorf("unsafe cell: command %q, %d unsafe runs", c.Command, c.Unsafe)
	}
	if _, ok := m.Cell("zk", "pause-holder"); ok {
		t.Error("a cell for a combination never run")
	}

	var md bytes.Buffer
	m.Markdown(&md)
	for _, want := range []string{
		"| design \\ fault | none | pause-holder |",
		"| **zk** | ❔ **unknown**",
		"❌ **unsafe (2/3 runs)**<br>5 lost, first at 2.5 s",
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
