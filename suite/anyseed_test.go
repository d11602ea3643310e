package suite

import (
	"strings"
	"testing"
)

// TestSettleAnySeed: an any-seed scenario passes when one of its seeds
// showed the violation, and fails only when none did; other scenarios are
// judged run by run as before.
func TestSettleAnySeed(t *testing.T) {
	os := []Outcome{
		{Scenario: "capsule", AnySeed: true, Seed: 1, Status: Fail},
		{Scenario: "capsule", AnySeed: true, Seed: 2, Status: Pass},
		{Scenario: "capsule", AnySeed: true, Seed: 3, Status: Errored},
		{Scenario: "missed", AnySeed: true, Seed: 1, Status: Fail},
		{Scenario: "missed", AnySeed: true, Seed: 2, Status: Fail},
		{Scenario: "plain", Seed: 1, Status: Fail},
		{Scenario: "plain", Seed: 2, Status: Pass},
	}
	settleAnySeed(os)
	want := []Status{Pass, Pass, Errored, Fail, Fail, Fail, Pass}
	for i, o := range os {
		if o.Status != want[i] {
			t.Errorf("%s seed %d: %s, want %s", o.Scenario, o.Seed, o.Status, want[i])
		}
	}
	if r := strings.Join(os[0].Reasons, "; "); !strings.Contains(r, "seed 2 showed it") {
		t.Errorf("the settled run does not say which seed showed it: %q", r)
	}
}

func TestParseAnySeed(t *testing.T) {
	for _, tc := range []struct{ expect, err string }{
		{"expect: {verdict: unsafe, any_seed: true}", ""},
		{"expect: {mutex: unsafe, any_seed: true}", ""},
		{"expect: {verdict: safe, any_seed: true}", "any_seed needs a violation"},
		{"expect: {verdict: unsafe, mutex: safe, any_seed: true}", "any_seed needs a violation"},
		{"expect: {verdict: unsafe, max_recovery: 2s, any_seed: true}", "any_seed needs a violation"},
	} {
		src := "scenarios:\n  - name: x\n    impl: redis-single\n    faults: pause-holder\n    " + tc.expect + "\n"
		f, err := Parse("s.yaml", []byte(src))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.expect, err)
		case tc.err == "" && !f.Scenarios[0].Expect.AnySeed:
			t.Errorf("%s: any_seed not read", tc.expect)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want %q", tc.expect, err, tc.err)
		}
	}
}
