package suite

import (
	"strings"
	"testing"
)

// TestReportUnmeasured: summary.md counts and names the scenarios that ran
// a matrix cell at the matrix's default expectation, once each whatever
// their seeds.
func TestReportUnmeasured(t *testing.T) {
	r := Report{Suite: "x", Outcomes: []Outcome{
		{Scenario: "redis-single-none", Expected: "safe", Status: Pass, Seed: 1},
		{Scenario: "redis-single-pause-client", Expected: "any", Unmeasured: true, Status: Pass, Seed: 1},
		{Scenario: "redis-single-pause-client", Expected: "any", Unmeasured: true, Status: Pass, Seed: 2},
		{Scenario: "redis-single-kill-node", Expected: "any", Unmeasured: true, Status: Pass, Seed: 1},
	}}
	var md strings.Builder
	r.markdown(&md)
	want := "\n### Unmeasured\n\n2 of 3 scenarios are matrix cells at the matrix's default expectation (any): "
	_, section, ok := strings.Cut(md.String(), want)
	if !ok {
		t.Fatalf("no unmeasured section %q in:\n%s", want, md.String())
	}
	if !strings.Contains(section, "`redis-single-pause-client`, `redis-single-kill-node`\n") || strings.Contains(section, "redis-single-none") {
		t.Errorf("unmeasured section lists the wrong scenarios:\n%s", section)
	}

	r.Outcomes = r.Outcomes[:1]
	md.Reset()
	r.markdown(&md)
	if strings.Contains(md.String(), "Unmeasured") {
		t.Errorf("a suite without unmeasured cells shows the section:\n%s", md.String())
	}
}
