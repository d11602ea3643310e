package reports

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/workloads"
)

// TestFaultEffectsShown: the summary and report.html say, per fault,
// whether it took effect and why; a long run's summary stays bounded.
func TestFaultEffectsShown(t *testing.T) {
	kinds := []checker.EffectKind{checker.Effective, checker.NoEffect, checker.Disturbed}
	for _, n := range []int{3, maxEffectLines + 3} {
		var r Results
		r.Verdict, r.Dir = checker.Valid, t.TempDir()
		for i := range n {
			start := int64(i+1) * 1e9
			r.Checks.Faults = append(r.Checks.Faults, history.Fault{Name: "pause-client", Target: fmt.Sprintf("c%d", i), Start: start, Stop: start + 5e8, Healed: true})
			k := kinds[i%len(kinds)]
			r.Checks.Efficacy = append(r.Checks.Efficacy, checker.FaultEffect{Fault: "pause-client", Target: fmt.Sprintf("c%d", i),
				Start: start, End: start + 5e8, Kind: k, Effective: k == checker.Effective, Reason: fmt.Sprintf("reason %d", i)})
		}
		var sum bytes.Buffer
		Summary(&sum, r)
		want := []string{fmt.Sprintf("of %d fault(s) took effect", n), "pause-client on c0 at 1.000s: effective: reason 0",
			"pause-client on c1 at 2.000s: no effect: reason 1", "pause-client on c2 at 3.000s: disturbed: reason 2"}
		if n > maxEffectLines {
			want = append(want, fmt.Sprintf("… %d more in %s", n-maxEffectLines, ResultsFile))
		}
		for _, w := range want {
			if !strings.Contains(sum.String(), w) {
				t.Errorf("%d faults: summary lacks %q:\n%s", n, w, sum.String())
			}
		}
		if n > maxEffectLines && strings.Contains(sum.String(), fmt.Sprintf("reason %d", maxEffectLines)) {
			t.Errorf("%d faults: summary lists more than %d effects:\n%s", n, maxEffectLines, sum.String())
		}
		var page bytes.Buffer
		if err := writeHTML(&page, r, nil); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if !strings.Contains(page.String(), fmt.Sprintf("</span>: reason %d</td>", i)) {
				t.Errorf("report.html lacks the effect of fault %d", i)
			}
		}
	}
}

// TestViolationTimesShareOpsOrigin: a violation's times count from the
// same zero as the ops listed under it, even when the history starts well
// before its first op (the coordinator's run-start mark, clients that
// begin late).
func TestViolationTimesShareOpsOrigin(t *testing.T) {
	recs := append([]history.Record{{Process: history.NemesisProcess, Type: history.RunStart, Asked: 8e9, Time: 100 * 1e6}},
		hist(hop{0, history.FAcquire, 1000, 1100, history.OK, ""}, hop{1, history.FAcquire, 1500, 1600, history.OK, ""},
			hop{0, history.FRelease, 2000, 2050, history.OK, ""})...)
	var r Results
	r.Verdict, r.DecidedBy, r.Dir = checker.Invalid, checker.MutexCheck, t.TempDir()
	r.Checks = checker.Check(recs, checker.Options{})
	if len(r.Checks.Mutex.Violations) != 1 {
		t.Fatalf("want one violation, got %+v", r.Checks.Mutex.Violations)
	}
	var sum bytes.Buffer
	Summary(&sum, r)
	believed := regexp.MustCompile(`c0 believed it held "lock-0" from (\S+) to (\S+) while`).FindStringSubmatch(sum.String())
	if believed == nil {
		t.Fatalf("no violation line in the summary:\n%s", sum.String())
	}
	acquired := regexp.MustCompile(`op #\d+ c0 acquire ok \[\S+ → (\S+)\]`).FindStringSubmatch(sum.String())
	released := regexp.MustCompile(`op #\d+ c0 release ok \[(\S+) → \S+\]`).FindStringSubmatch(sum.String())
	if acquired == nil || released == nil {
		t.Fatalf("the violation's ops are not listed:\n%s", sum.String())
	}
	if believed[1] != acquired[1] || believed[2] != released[1] || believed[1] != "1.000s" {
		t.Errorf("c0 believed it held the lock from %s to %s, but its acquire returned at %s and its release was called at %s "+
			"(want 1.000s: 1100 ms into a history that starts at 100 ms):\n%s", believed[1], believed[2], acquired[1], released[1], sum.String())
	}
	if first := r.Checks.Mutex.FirstViolationS; first == nil || fmt.Sprintf("%.3fs", *first) != "1.500s" {
		t.Errorf("first violation at %v s, want 1.500 (c1's acquire returned at 1600 ms)", first)
	}
}

// TestRecoveryNeverBounded: a fault no client recovered from is bounded by
// how long the clients went on after it, counted from the fault (never
// negative, even when the history starts long before its first op), and
// one at the very end says the run ended.
func TestRecoveryNeverBounded(t *testing.T) {
	recs := append([]history.Record{{Process: history.NemesisProcess, Type: history.RunStart, Asked: 3e9, Time: 0}},
		hist(hop{0, history.FAcquire, 1000, 1100, history.OK, ""}, hop{0, history.FRelease, 1200, 1300, history.OK, ""},
			hop{0, history.FAcquire, 1400, 1500, history.OK, ""}, hop{0, history.FRelease, 1900, 2000, history.OK, ""})...)
	strike := func(at, until int64) []history.Record {
		return []history.Record{
			{Process: history.NemesisProcess, Type: history.FaultStart, F: "fault", Fault: "pause-client", Target: "c1", Time: at * 1e6},
			{Process: history.NemesisProcess, Type: history.FaultStop, F: "fault", Fault: "pause-client", Target: "c1", Time: until * 1e6},
		}
	}
	for _, tc := range []struct {
		at   int64
		want string
	}{
		{1600, "pause-client on c1 never in the 0.4 s the run went on"},
		{1990, "pause-client on c1 never: the run ended as the fault began"},
		{2500, "pause-client on c1 never: the run ended as the fault began"},
	} {
		all := append(append([]history.Record{}, recs...), strike(tc.at, tc.at+100)...)
		var r Results
		r.Verdict, r.Dir = checker.Valid, t.TempDir()
		r.Checks = checker.Check(all, checker.Options{})
		r.Metrics = checker.Measure(all)
		var sum bytes.Buffer
		Summary(&sum, r)
		if !strings.Contains(sum.String(), tc.want) {
			t.Errorf("fault at %d ms: the summary lacks %q:\n%s", tc.at, tc.want, sum.String())
		}
	}
}

// TestUnexercisedVerdict: a valid run whose every fault had no effect
// says so on its verdict line and in its headline; one fault that took
// effect, an invalid verdict or a run without faults say nothing of it.
func TestUnexercisedVerdict(t *testing.T) {
	effects := func(kinds ...checker.EffectKind) []checker.FaultEffect {
		var out []checker.FaultEffect
		for i, k := range kinds {
			out = append(out, checker.FaultEffect{Fault: "pause-holder", Target: fmt.Sprintf("c%d", i), Kind: k,
				Effective: k == checker.Effective, Reason: "why"})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		verdict checker.Verdict
		effects []checker.FaultEffect
		said    bool
	}{
		{"no strike took effect", checker.Valid, effects(checker.NoEffect, checker.Disturbed), true},
		{"one took effect", checker.Valid, effects(checker.NoEffect, checker.Effective), false},
		{"invalid", checker.Invalid, effects(checker.NoEffect), false},
		{"no faults", checker.Valid, nil, false},
	} {
		var r Results
		r.Verdict, r.DecidedBy, r.Workload, r.Dir = tc.verdict, checker.MutexCheck, "lock", t.TempDir()
		r.Checks.Efficacy = tc.effects
		var sum bytes.Buffer
		Summary(&sum, r)
		line := regexp.MustCompile(`(?m)^verdict .*$`).FindString(sum.String())
		if said := strings.Contains(line, "(but no fault took effect)"); said != tc.said {
			t.Errorf("%s: verdict line %q", tc.name, line)
		}
		if said := strings.Contains(Headline(r), "no fault took effect"); said != tc.said {
			t.Errorf("%s: headline %q", tc.name, Headline(r))
		}
	}
}

// TestTimeoutsLine: the summary says the timeouts a verdict holds under,
// with the knobs each server got; a run checked before they were recorded
// says nothing of them.
func TestTimeoutsLine(t *testing.T) {
	r := Results{Dir: t.TempDir(), Timeouts: []Timeout{{Name: "io_timeout", Value: "500ms"},
		{Name: "server_user_timeout", Value: "2s", Knobs: []string{"pgbouncer tcp_user_timeout=2000", "postgres tcp_user_timeout=2000"}},
		{Name: "server_idle_timeout", Value: "server default"}}}
	var sum bytes.Buffer
	Summary(&sum, r)
	want := "timeouts  io_timeout 500ms, server_user_timeout 2s (pgbouncer tcp_user_timeout=2000; postgres tcp_user_timeout=2000), " +
		"server_idle_timeout server default\n"
	if !strings.Contains(sum.String(), want) {
		t.Errorf("summary:\n%s\nwant the line %q", sum.String(), want)
	}
	r.Timeouts = nil
	sum.Reset()
	Summary(&sum, r)
	if strings.Contains(sum.String(), "timeouts") {
		t.Errorf("a run without recorded timeouts:\n%s", sum.String())
	}
}

// TestSummaryStatesFencing: the resource line says what the resource
// checked tokens on when a critical section carried one, and a finding
// beyond the lease under writes-only fencing says why fencing did not
// cure it; a run without tokens says nothing of fencing.
func TestSummaryStatesFencing(t *testing.T) {
	for _, tc := range []struct {
		fencing string
		class   checker.LeaseClass
		want    []string
		not     []string
	}{
		{workloads.FenceWrites, checker.BeyondLease, []string{"tokens checked on writes\n", "tokens were checked on writes only"}, nil},
		{workloads.FenceReadsWrites, checker.BeyondLease, []string{"tokens checked on reads-writes\n"}, []string{"tokens were checked"}},
		{workloads.FenceWrites, checker.InsideLease, []string{"tokens checked on writes\n"}, []string{"tokens were checked"}},
		{"", checker.BeyondLease, nil, []string{"tokens checked", "tokens were checked"}},
	} {
		var r Results
		r.Verdict, r.DecidedBy, r.Dir, r.Fencing = checker.Invalid, checker.ResourceCheck, t.TempDir(), tc.fencing
		r.Checks.Lease = &checker.LeaseFinding{Class: tc.class, Why: "why"}
		var sum bytes.Buffer
		Summary(&sum, r)
		for _, w := range tc.want {
			if !strings.Contains(sum.String(), w) {
				t.Errorf("fencing %q, %s: summary lacks %q:\n%s", tc.fencing, tc.class, w, sum.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(sum.String(), n) {
				t.Errorf("fencing %q, %s: summary says %q:\n%s", tc.fencing, tc.class, n, sum.String())
			}
		}
	}
}
