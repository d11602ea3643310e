package reports

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
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
