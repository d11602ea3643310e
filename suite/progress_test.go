package suite

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgressCountsFailures: each result line says how many runs are
// done of all and, once one has, how many failed so far.
func TestProgressCountsFailures(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false, 3)
	p.end(0, Outcome{Scenario: "a", Seed: 1, Status: Pass})
	p.end(1, Outcome{Scenario: "b", Seed: 1, Status: Fail, Command: "locktest run --impl x"})
	p.end(2, Outcome{Scenario: "c", Seed: 1, Status: Errored, Error: "server did not start"})
	p.close()
	lines := strings.Split(b.String(), "\n")
	for _, want := range []string{"[1/3 0s] PASS  a seed 1", "[2/3 0s, 1 failed] FAIL  b seed 1", "[3/3 0s, 2 failed] ERROR c seed 1"} {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("no line begins %q:\n%s", want, b.String())
		}
	}
}
