package tests

import (
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
)

// TestPauseHolder reproduces docs/anomalies.md rows 1, 2 and 20: a holder paused
// past its lease loses an update on the unfenced lock; the fenced lock's
// resource rejects the stale write while the mutex check still sees two
// believed holders; without faults both are safe.
func TestPauseHolder(t *testing.T) {
	cases := []struct {
		impl, fault  string
		code         int
		mutex, data  checker.Verdict
		wantRejected bool
	}{
		{"redis-single", "pause-holder", 1, checker.Invalid, checker.Invalid, false},
		{"redis-single-fenced", "pause-holder", 0, checker.Invalid, checker.Valid, true},
		{"redis-single", "none", 0, checker.Valid, checker.Valid, false},
		{"redis-single-fenced", "none", 0, checker.Valid, checker.Valid, false},
	}
	for _, tc := range cases {
		t.Run(tc.impl+"/"+tc.fault, func(t *testing.T) {
			r := locktest(t, "run", "--impl", tc.impl, "--workload", "counter", "--fault", tc.fault,
				"--clients", "5", "--duration", "8s", "--seed", "1", "--fault-interval", "2s")
			r.assertNothingLeft(t)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			res := r.results(t)
			if res.Checks.Mutex.Verdict != tc.mutex || res.Checks.Resource.Verdict != tc.data {
				t.Fatalf("mutex %s resource %s, want %s %s", res.Checks.Mutex.Verdict, res.Checks.Resource.Verdict, tc.mutex, tc.data)
			}
			if res.Checks.Stats.Final == nil {
				t.Fatal("no final read of the resource")
			}
			if tc.data == checker.Invalid {
				if res.Checks.Stats.Lost == 0 || len(res.Checks.Resource.Violations) == 0 {
					t.Fatalf("invalid but no lost update named: %+v", res.Checks.Stats)
				}
				v := res.Checks.Resource.Violations[0]
				if len(v.Ops) < 2 || len(v.Faults) == 0 || !strings.Contains(v.Faults[0], "pause-holder") {
					t.Fatalf("lost update not named with its ops and fault: %+v", v)
				}
				if !strings.Contains(r.stdout, "lost") {
					t.Fatalf("summary does not mention the lost update:\n%s", r.stdout)
				}
			}
			if tc.wantRejected && res.Checks.Stats.Rejected == 0 {
				t.Fatal("fenced run rejected no stale write")
			}
			if tc.mutex == checker.Invalid && len(res.Checks.Mutex.Violations) == 0 {
				t.Fatal("mutex check invalid but names no believed holders")
			}
		})
	}
}
