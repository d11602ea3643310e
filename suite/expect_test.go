package suite

import (
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/reports"
)

func TestJudge(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	const s = int64(time.Second)
	// results builds a 20 s counter run with the given verdicts and
	// recoveries (fault start in seconds → recovery).
	results := func(verdict, mutex checker.Verdict, recs map[int64]*float64) reports.Results {
		r := reports.Results{Verdict: verdict, DecidedBy: checker.ResourceCheck}
		r.Checks.Mutex.Verdict = mutex
		r.Checks.Start = 100 * s
		r.Metrics.SpanSeconds = 20
		for start, rec := range recs {
			r.Metrics.Recoveries = append(r.Metrics.Recoveries, checker.Recovery{Fault: "f", Target: "c1", Start: r.Checks.Start + start*s, NextAcquireMs: rec})
		}
		if verdict == checker.Invalid {
			r.Checks.Stats.Lost = 2
		}
		return r
	}
	valid, invalid, unknown := checker.Valid, checker.Invalid, checker.Unknown
	// hung is a counter run whose resource check passed and whose verdict
	// is unknown because n clients broke; undelivered adds a fault that
	// was not delivered as asked.
	hung := func(n int, undelivered bool) reports.Results {
		r := results(unknown, valid, nil)
		r.Checks.Resource.Verdict = valid
		r.BrokenClients = n
		r.Health = &reports.Health{}
		if undelivered {
			r.Health.Undelivered = []string{"every one of 2 fault strike(s) lasted far from the length asked"}
		}
		return r
	}
	mayHang := Expect{Verdict: reports.Safe, ClientsMayHang: true}
	cases := []struct {
		name   string
		expect Expect
		res    reports.Results
		got    string
		reason string // "" = pass
	}{
		{"safe and safe", Expect{Verdict: reports.Safe}, results(valid, valid, nil), "safe", ""},
		{"unsafe reproduced", Expect{Verdict: reports.Unsafe}, results(invalid, invalid, nil), "unsafe (2 lost updates)", ""},
		{"unsafe not reproduced", Expect{Verdict: reports.Unsafe}, results(valid, invalid, nil), "safe", "the harness lost its teeth"},
		{"safe violated", Expect{Verdict: reports.Safe}, results(invalid, invalid, nil), "unsafe (2 lost updates)", "the resource check found a violation"},
		{"unknown is not safe", Expect{Verdict: reports.Safe}, results(unknown, valid, nil), "unknown", "neither safe nor unsafe"},
		{"unknown is not unsafe", Expect{Verdict: reports.Unsafe}, results(unknown, valid, nil), "unknown", "neither safe nor unsafe"},
		{"any: unsafe", Expect{Verdict: reports.AnyOutcome}, results(invalid, invalid, nil), "unsafe (2 lost updates)", ""},
		{"any: safe", Expect{Verdict: reports.AnyOutcome}, results(valid, valid, nil), "safe", ""},
		{"any: unknown learns nothing", Expect{Verdict: reports.AnyOutcome}, results(unknown, valid, nil), "unknown", "neither safe nor unsafe"},
		{"clients may hang: hung clients, checks passed", mayHang, hung(2, false), "unknown (safe on what the clients did; 2 clients hung past the deadline, as allowed)", ""},
		{"clients may hang: no hang, unknown for another reason", mayHang, hung(0, false), "unknown", "neither safe nor unsafe"},
		{"clients may hang: a fault not delivered", mayHang, hung(1, true), "unknown", "neither safe nor unsafe"},
		{"clients may hang: a violation still fails", mayHang, results(invalid, invalid, nil), "unsafe (2 lost updates)", "the resource check found a violation"},
		{"hung clients without the allowance", Expect{Verdict: reports.Safe}, hung(2, false), "unknown", "neither safe nor unsafe"},
		{"fenced: data safe, mutex unsafe", Expect{Verdict: reports.Safe, Mutex: reports.Unsafe}, results(valid, invalid, nil), "safe, mutex unsafe", ""},
		{"fenced: fault did not bite", Expect{Verdict: reports.Safe, Mutex: reports.Unsafe}, results(valid, valid, nil), "safe, mutex safe", "expected the mutex check unsafe, got safe"},
		{"recovery within bound", Expect{MaxRecovery: 2 * time.Second}, results(valid, valid, map[int64]*float64{3: ms(1100), 9: ms(1900)}), "safe, recovers ≤ 1.9s", ""},
		{"recovery over bound", Expect{MaxRecovery: 2 * time.Second}, results(valid, valid, map[int64]*float64{3: ms(2500)}), "safe, recovers ≤ 2.5s", "recovery took 2.5s after f on c1, over the bound of 2s"},
		{"never recovered, bound expected", Expect{MaxRecovery: 2 * time.Second}, results(valid, valid, map[int64]*float64{3: nil}), "safe, never recovers", "never acquired again"},
		{"fault too close to the end is not judged", Expect{MaxRecovery: 2 * time.Second}, results(valid, valid, map[int64]*float64{3: ms(900), 19: nil}), "safe, recovers ≤ 900ms", ""},
		{"no fault, no liveness evidence", Expect{MaxRecovery: 2 * time.Second}, results(valid, valid, nil), "safe, no recovery measured", "no fault started early enough"},
		{"never recovers", Expect{Verdict: reports.Safe, NeverRecovers: true}, results(valid, valid, map[int64]*float64{5: nil}), "safe, never recovers", ""},
		{"never recovers, but did", Expect{NeverRecovers: true}, results(valid, valid, map[int64]*float64{5: ms(1000)}), "safe, recovers ≤ 1s", "expected no recovery, but the lock was acquired 1s after f on c1"},
		{"never recovers needs 3×TTL after the fault", Expect{NeverRecovers: true}, results(valid, valid, map[int64]*float64{18: nil}), "safe, no recovery measured", "no fault started early enough"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reasons := tc.expect.Judge(tc.res, time.Second)
			if got != tc.got {
				t.Errorf("got %q, want %q", got, tc.got)
			}
			all := strings.Join(reasons, "; ")
			if (tc.reason == "") != (len(reasons) == 0) || !strings.Contains(all, tc.reason) {
				t.Errorf("reasons %q, want one containing %q", all, tc.reason)
			}
		})
	}
}
