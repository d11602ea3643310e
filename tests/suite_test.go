package tests

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/suite"
)

// writeSuite writes a suite file into a fresh directory and returns its
// path and an --out directory beside it.
func writeSuite(t *testing.T, src string) (file, out string) {
	t.Helper()
	dir := t.TempDir()
	file = filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, filepath.Join(dir, "out")
}

type junitReport struct {
	Suites []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, out string) junitReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, suite.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var j junitReport
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatalf("junit.xml: %v\n%s", err, data)
	}
	if len(j.Suites) != 1 {
		t.Fatalf("junit.xml has %d suites", len(j.Suites))
	}
	return j
}

// TestSuiteMismatch runs a tiny suite whose middle scenario deliberately
// expects the unfenced lock to stay safe under a pause past its lease: the
// suite must fail, say so in JUnit, and print the one command that
// reproduces the failure — which must reproduce it.
func TestSuiteMismatch(t *testing.T) {
	file, out := writeSuite(t, `name: tiny
defaults:
  duration: 5s
  fault_interval: 1500ms
  clients: 4
scenarios:
  - name: unfenced-unsafe
    impl: redis-single
    faults: pause-holder
    expect: {verdict: unsafe, max_recovery: 3s}
  - name: unfenced-claimed-safe
    impl: redis-single
    faults: pause-holder
    expect: safe
  - name: fenced-control
    impl: redis-single-fenced
    faults: none
    expect: safe
`)
	r := locktest(t, "suite", "run", file, "--out", out, "--parallel", "2")
	assertNothingLeft(t, out, binary)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (one scenario does not match its expectation)", r.code)
	}
	j := readJUnit(t, out).Suites[0]
	if j.Tests != 3 || j.Failures != 1 || j.Errors != 0 {
		t.Fatalf("junit: %d tests, %d failures, %d errors; want 3, 1, 0", j.Tests, j.Failures, j.Errors)
	}
	var failed string
	for _, c := range j.Cases {
		if c.Failure != nil {
			failed = c.Name
			if !strings.Contains(c.Failure.Message, "expected safe, got unsafe") || !strings.Contains(c.Failure.Body, "locktest run ") {
				t.Fatalf("failure does not say what happened and how to reproduce it: %+v", c.Failure)
			}
		}
	}
	if failed != "unfenced-claimed-safe seed 1" {
		t.Fatalf("failed case %q, want unfenced-claimed-safe seed 1", failed)
	}
	// Progress is plain lines when stderr is not a terminal.
	if !strings.Contains(r.stderr, "[0/3 ") || !strings.Contains(r.stderr, "PASS  unfenced-unsafe seed 1") {
		t.Fatalf("no plain progress lines on stderr:\n%s", r.stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, suite.SummaryFile))
	if err != nil || !strings.Contains(string(md), "| ❌ | unfenced-claimed-safe |") {
		t.Fatalf("summary.md does not show the failure (%v):\n%s", err, md)
	}
	for _, name := range []string{"unfenced-unsafe", "unfenced-claimed-safe", "fenced-control"} {
		if _, err := os.Stat(filepath.Join(out, suite.RunsDir, name+"-seed1", name, "latest", "results.json")); err != nil {
			t.Fatalf("run directory of %s: %v", name, err)
		}
	}

	// The printed command alone reproduces the failure.
	var cmd string
	for _, line := range strings.Split(r.stdout, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "reproduce: "); ok {
			cmd = c
		}
	}
	args := strings.Fields(cmd)
	if len(args) < 3 || args[0] != "locktest" || args[1] != "run" || !strings.Contains(cmd, "--seed 1") {
		t.Fatalf("no reproducing command on stdout:\n%s", r.stdout)
	}
	again := locktest(t, args[1:]...)
	again.assertNothingLeft(t)
	if again.code != 1 {
		t.Fatalf("the reproducing command exited %d, want 1 (unsafe)", again.code)
	}
}

// TestSuiteBadInput: a malformed suite names the file, line and field,
// exits 254 and starts nothing.
func TestSuiteBadInput(t *testing.T) {
	ok := "scenarios:\n  - name: a\n    impl: redis-single\n    expect: safe\n"
	cases := []struct {
		name, src string
		env       []string
		want      string
	}{
		{"bad yaml", "scenarios:\n  - name: a\n\timpl: redis-single\n", nil, "tiny.yaml:2: not valid YAML: found a tab character"},
		{"unknown field", "scenarios:\n  - name: a\n    impl: redis-single\n    clients: 2\n    falts: none\n    expect: safe\n", nil,
			"tiny.yaml:5: scenarios[0].falts: unknown field (valid: "},
		{"unknown design", "scenarios:\n  - name: a\n    impl: redis-quantum\n    expect: safe\n", nil,
			`tiny.yaml:3: scenarios[0].impl: unknown impl "redis-quantum" (valid: `},
		{"unknown fault", "scenarios:\n  - name: a\n    impl: redis-single\n    faults: [gremlins]\n    expect: safe\n", nil,
			`tiny.yaml:4: scenarios[0].faults: unknown fault "gremlins" (valid: `},
		{"inapplicable fault", "scenarios:\n  - name: a\n    impl: redis-single\n    workload: mutex\n    faults: [pause-holder, slow-resource-write]\n    expect: unsafe\n", nil,
			"tiny.yaml:5: scenarios[0].faults: fault slow-resource-write does not apply to impl redis-single: workload mutex has no resource"},
		{"unknown design in the matrix", "matrix:\n  designs: [redis-single, redis-quantum]\n  faults: all\n  expect: any\n", nil,
			`tiny.yaml:2: matrix.designs: unknown impl "redis-quantum" (valid: `},
		{"second scenario wrong", ok + "  - name: b\n    impl: redis-single\n    expect: {max_recovery: 0s}\n", nil,
			"tiny.yaml:7: scenarios[1].expect.max_recovery: want a positive duration"},
		{"server binary missing", ok, []string{"PATH=" + t.TempDir()}, "apt-get install redis-server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file, out := writeSuite(t, tc.src)
			cmd := exec.Command(binary, "suite", "run", file, "--out", out)
			cmd.Env = append(os.Environ(), tc.env...)
			output, err := cmd.CombinedOutput()
			ee, isExit := err.(*exec.ExitError)
			if !isExit || ee.ExitCode() != 254 {
				t.Fatalf("exit %v, want 254; output:\n%s", err, output)
			}
			got := strings.TrimSpace(string(output))
			if strings.Count(got, "\n") != 0 || !strings.Contains(got, tc.want) {
				t.Fatalf("got  %s\nwant one line containing %s", got, tc.want)
			}
			if tc.env == nil && !strings.HasPrefix(got, "locktest: "+file) {
				t.Fatalf("the error does not start with the file name: %s", got)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("bad input created --out: %v", err)
			}
			assertNothingLeft(t, out)
		})
	}
}

// TestSuiteInterrupt: Ctrl-C in the middle of a suite stops every run,
// leaves no process behind, and still writes the report, with the runs it
// could not finish marked as such.
func TestSuiteInterrupt(t *testing.T) {
	file, out := writeSuite(t, `scenarios:
  - {name: a, impl: redis-single, faults: pause-holder, duration: 60s, fault_interval: 500ms, fault_duration: 20s, expect: unsafe}
  - {name: b, impl: redis-single-fenced, faults: none, duration: 60s, expect: safe}
  - {name: c, impl: redis-single, faults: none, duration: 60s, expect: safe}
`)
	cmd := exec.Command(binary, "suite", "run", file, "--out", out, "--parallel", "2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	hist := filepath.Join(out, suite.RunsDir, "a-seed1", "a", "latest", "history.jsonl")
	waitForFault(t, hist)
	if len(ourProcesses(t, out)) == 0 {
		t.Fatal("found no process of the suite: the leftover check would prove nothing")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v, want exit 130", err)
	}
	assertNothingLeft(t, out)
	j := readJUnit(t, out).Suites[0]
	if j.Tests != 3 || j.Errors != 3 || j.Failures != 0 {
		t.Fatalf("junit after interrupt: %d tests, %d errors, %d failures; want 3, 3, 0", j.Tests, j.Errors, j.Failures)
	}
}

// TestSuiteShardMerge: a tiny suite run whole and as 2 shards (all three at
// once, 4 runs in flight) gives the same verdicts once the shards are
// merged, with the exit code of the whole run; a merge that lacks a shard
// says which and exits 2; a merge of one shard twice is refused in one
// line, writing nothing.
func TestSuiteShardMerge(t *testing.T) {
	file, out := writeSuite(t, `name: tiny
defaults:
  duration: 5s
  fault_interval: 1500ms
  clients: 4
scenarios:
  - {name: unfenced-pause, impl: redis-single, faults: pause-holder, expect: unsafe}
  - {name: fenced-pause, impl: redis-single-fenced, faults: pause-holder, expect: {verdict: safe, mutex: unsafe}}
  - {name: unfenced-none, impl: redis-single, faults: none, expect: safe}
`)
	whole, shard1, shard2 := out+"-whole", out+"-1", out+"-2"
	invocations := []struct {
		name string
		args []string
	}{
		{"whole", []string{"suite", "run", file, "--out", whole, "--parallel", "2"}},
		{"shard 1", []string{"suite", "run", file, "--shard", "1/2", "--out", shard1, "--parallel", "1"}},
		{"shard 2", []string{"suite", "run", file, "--shard", "2/2", "--out", shard2, "--parallel", "1"}},
	}
	codes := make([]int, len(invocations))
	t.Run("runs", func(t *testing.T) {
		for i, inv := range invocations {
			t.Run(inv.name, func(t *testing.T) {
				t.Parallel()
				codes[i] = locktest(t, inv.args...).code
			})
		}
	})
	assertNothingLeft(t, filepath.Dir(out), binary)
	if !slices.Equal(codes, []int{0, 0, 0}) {
		t.Fatalf("exit codes whole, shard 1, shard 2: %v; want 0 0 0", codes)
	}
	for i, dir := range []string{shard1, shard2} {
		r, err := suite.ReadReport(dir)
		if err != nil || r.Shard == nil || r.Shard.Index != i+1 || r.Shard.Count != 2 || r.Shard.Runs != 3 || len(r.Outcomes) == 0 {
			t.Fatalf("%s does not record its shard (%v): %+v", dir, err, r.Shard)
		}
	}

	merged := out + "-merged"
	m := locktest(t, "suite", "merge", shard2, shard1, "--out", merged)
	if m.code != 0 {
		t.Fatalf("merge exited %d, want 0 as the whole run", m.code)
	}
	// The merge must carry each shard's outcome as it was, counts and all;
	// the whole run must agree with it on every verdict, though not on how
	// many updates a pause happened to cost (that depends on timing).
	outcomes := func(withCounts bool, dirs ...string) []string {
		var v []string
		for _, dir := range dirs {
			r, err := suite.ReadReport(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range r.Outcomes {
				line := fmt.Sprintf("%d %s seed %d: %s %s", o.Index, o.Scenario, o.Seed, o.Status, o.Verdict)
				if withCounts {
					line += fmt.Sprintf(" (%s)", o.Got)
				}
				v = append(v, line)
			}
		}
		slices.Sort(v)
		return v
	}
	if s, g := outcomes(true, shard1, shard2), outcomes(true, merged); !slices.Equal(s, g) {
		t.Fatalf("merged output differs from its shards:\nshards %q\nmerged %q", s, g)
	}
	if w, g := outcomes(false, whole), outcomes(false, merged); !slices.Equal(w, g) {
		t.Fatalf("merged shards' verdicts differ from the whole run's:\nwhole  %q\nmerged %q", w, g)
	}
	if j := readJUnit(t, merged).Suites[0]; j.Tests != 3 || j.Failures != 0 || j.Errors != 0 {
		t.Fatalf("merged junit: %d tests, %d failures, %d errors; want 3, 0, 0", j.Tests, j.Failures, j.Errors)
	}
	if _, err := os.Stat(filepath.Join(merged, "compare.md")); err != nil {
		t.Fatalf("merged output has no comparison: %v", err)
	}

	partial := out + "-partial"
	p := locktest(t, "suite", "merge", shard1, "--out", partial)
	md, _ := os.ReadFile(filepath.Join(partial, suite.SummaryFile))
	if p.code != 2 || !strings.Contains(string(md), "INCOMPLETE") || !strings.Contains(string(md), "shard(s) 2 of 2 missing") {
		t.Fatalf("merge without shard 2: exit %d, want 2 and a summary naming the missing shard:\n%s", p.code, md)
	}

	dup := out + "-dup"
	d := locktest(t, "suite", "merge", shard1, shard1, "--out", dup)
	if d.code != 254 || strings.Count(strings.TrimSpace(d.stderr), "\n") != 0 || !strings.Contains(d.stderr, "are both shard 1/2") {
		t.Fatalf("merge of one shard twice: exit %d, want 254 and one line:\n%s", d.code, d.stderr)
	}
	if _, err := os.Stat(dup); !os.IsNotExist(err) {
		t.Fatalf("a refused merge created its output: %v", err)
	}
}

// TestSuiteStopEarly: with stop_early, a run expected unsafe ends at its
// first violation, long before its duration, still judged unsafe and with
// its timing honoured; a run expected safe goes to its end.
func TestSuiteStopEarly(t *testing.T) {
	file, out := writeSuite(t, `name: tiny
defaults:
  stop_early: true
  fault_interval: 1500ms
  clients: 4
scenarios:
  - {name: unfenced-pause, impl: redis-single, faults: pause-holder, duration: 40s, expect: unsafe}
  - {name: fenced-none, impl: redis-single-fenced, faults: none, duration: 4s, expect: safe}
`)
	r := locktest(t, "suite", "run", file, "--out", out, "--parallel", "2")
	assertNothingLeft(t, out, binary)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0", r.code)
	}
	for _, tc := range []struct {
		name       string
		stopped    bool
		minS, maxS float64
	}{
		{"unfenced-pause", true, 0, 20},
		{"fenced-none", false, 4, 10},
	} {
		res, err := reports.ReadResults(filepath.Join(out, suite.RunsDir, tc.name+"-seed1", tc.name, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		h := res.Health
		if h == nil || h.RunS == nil || (len(h.StoppedBy) > 0) != tc.stopped || *h.RunS < tc.minS || *h.RunS > tc.maxS {
			t.Fatalf("%s: health %+v; want stopped %v after %v–%v s", tc.name, h, tc.stopped, tc.minS, tc.maxS)
		}
		// A loaded machine may delay the coordinator; the stop itself
		// must not read as clients or a final heal that fell short.
		for _, p := range append(h.Problems, h.Undelivered...) {
			if strings.Contains(p, "clients ran") || strings.Contains(p, "final heal") || strings.Contains(p, "never started") {
				t.Errorf("%s: timing flagged: %s", tc.name, p)
			}
		}
	}
}
