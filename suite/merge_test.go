package suite

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
)

// shardOut writes the suite.json of a shard's output, with one outcome per
// index given, into a new directory and returns it. edit changes the
// report before it is written.
func shardOut(t *testing.T, index, count int, runs []int, edit func(*Report)) string {
	t.Helper()
	dir := t.TempDir()
	r := Report{Suite: "tiny", File: "tiny.yaml", Digest: strings.Repeat("ab", 32), Build: reports.Build{Module: "m", Go: "go1"},
		Out: "/elsewhere/out", Parallel: 2, Started: time.Unix(1000, 0).Add(time.Duration(index) * time.Second), WallSeconds: 10,
		Shard: &Shard{Index: index, Count: count, Runs: 5}}
	for _, i := range runs {
		r.Outcomes = append(r.Outcomes, Outcome{Index: i, Scenario: "s", Seed: int64(i), Expected: "safe", Status: Errored, Error: "x"})
	}
	if edit != nil {
		edit(&r)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMergeRefuses: outputs that are not one suite's shards are refused as
// bad input, naming the directory and why.
func TestMergeRefuses(t *testing.T) {
	one := shardOut(t, 1, 2, []int{0, 3}, nil)
	other := func(edit func(*Report)) string { return shardOut(t, 2, 2, []int{1, 2, 4}, edit) }
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		dirs []string
		out  string
		want string
	}{
		{"none", nil, "", "give the output directories"},
		{"no suite.json", []string{one, t.TempDir()}, "", "not a suite output"},
		{"whole run", []string{one, other(func(r *Report) { r.Shard = nil })}, "", "not the output of suite run --shard"},
		{"duplicate", []string{one, shardOut(t, 1, 2, []int{0, 3}, nil)}, "", "are both shard 1/2"},
		{"other suite file", []string{one, other(func(r *Report) { r.Digest = strings.Repeat("cd", 32) })}, "", "another suite file"},
		{"other build", []string{one, other(func(r *Report) { r.Build.Revision = "123" })}, "", "another locktest build"},
		{"other seeds", []string{one, other(func(r *Report) { r.Seeds = 3 })}, "", "another --seeds"},
		{"other split", []string{one, other(func(r *Report) { r.Shard.Count = 3 })}, "", "another split"},
		{"lost run directory", []string{one, other(func(r *Report) {
			r.Outcomes[0].Status, r.Outcomes[0].Dir = Pass, "/elsewhere/out/runs/s-seed1/s/20260101T000000.000"
		})}, "", "lacks the run directory of s seed 1"},
		{"out not empty", []string{one, other(nil)}, full, "exists and is not empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "merged")
			}
			_, err := Merge(tc.dirs, out)
			var bad *runner.BadConfigError
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Merge: %v, want a BadConfigError containing %q", err, tc.want)
			}
			if tc.out == "" {
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("a refused merge created its output: %v", err)
				}
			}
		})
	}
}

// TestMerge: shards merge into one report in the whole run's order, from
// the first start to the last end; a missing shard is named, fails the
// suite, and is an error case of the JUnit report. The files land in the
// output with no temporary directory left beside it.
func TestMerge(t *testing.T) {
	first := shardOut(t, 2, 3, []int{1, 2}, nil)
	// An interrupted run's directory, recorded where the shard ran.
	second := shardOut(t, 3, 3, []int{0, 4}, func(r *Report) {
		r.Outcomes[1].Status, r.Outcomes[1].Dir = NotRun, "/elsewhere/out/runs/s-seed4/s/20260101T000000.000"
	})
	out := filepath.Join(t.TempDir(), "merged")
	r, err := Merge([]string{first, second}, out)
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	for _, o := range r.Outcomes {
		order = append(order, o.Index)
	}
	if !slices.Equal(order, []int{0, 1, 2, 4}) {
		t.Errorf("merged runs in order %v, want 0 1 2 4", order)
	}
	if want := filepath.Join(second, "runs/s-seed4/s/20260101T000000.000"); r.Outcomes[3].Dir != want {
		t.Errorf("run directory %q, want %q: under the shard output given, absolute", r.Outcomes[3].Dir, want)
	}
	if !slices.Equal(r.Missing, []int{1}) || r.Passed() || r.Shard != nil || r.Out != out {
		t.Errorf("merged: missing %v, passed %v, shard %v, out %q; want [1], false, nil, %q", r.Missing, r.Passed(), r.Shard, r.Out, out)
	}
	if r.WallSeconds != 11 { // shard 2 started at 1002 s, shard 3 ended at 1003+10 s
		t.Errorf("merged wall %v s, want 11", r.WallSeconds)
	}
	if h := r.headline(); !strings.Contains(h, "INCOMPLETE") || !strings.Contains(h, "shard(s) 1 of 3 missing") {
		t.Errorf("headline %q does not say which shard is missing", h)
	}
	if err := r.WriteMerged(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ReportFile, SummaryFile, JUnitFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("merged output lacks %s: %v", f, err)
		}
	}
	junit, _ := os.ReadFile(filepath.Join(out, JUnitFile))
	if !strings.Contains(string(junit), `name="shard 1 of 3"`) {
		t.Errorf("junit.xml has no error case for the missing shard:\n%s", junit)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".merged.merging-*")); len(left) > 0 {
		t.Errorf("temporary directories left beside the output: %v", left)
	}
	back, err := ReadReport(out)
	if err != nil || len(back.Merged) != 2 || len(back.Outcomes) != 4 {
		t.Errorf("suite.json read back: %v, %d merged, %d outcomes; want 2, 4", err, len(back.Merged), len(back.Outcomes))
	}
}
