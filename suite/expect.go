package suite

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/workloads"
)

// Expect is what every run of a scenario must show. An expected unsafe
// outcome that does not show up fails the suite just like a safe design
// gone wrong: the harness would have lost its teeth.
type Expect struct {
	// Verdict is reports.Safe, Unsafe or AnyOutcome for the run's verdict
	// (the check of what the workload protects), or "" when only liveness
	// is judged.
	Verdict reports.Outcome `json:"verdict,omitempty"`
	// Mutex, when set, judges the mutual-exclusion check too: a fenced
	// design under a pause keeps the data safe while two clients believed
	// they held the lock, and Mutex: unsafe proves the fault did bite.
	Mutex reports.Outcome `json:"mutex,omitempty"`
	// MaxRecovery bounds the time from each fault's start until another
	// client acquired the lock.
	MaxRecovery time.Duration `json:"max_recovery,omitempty"`
	// NeverRecovers expects the lock never to be acquired again after a
	// fault (a lock without expiry whose holder died).
	NeverRecovers bool `json:"never_recovers,omitempty"`
	// ClientsMayHang accepts, as the Verdict expected, a run that is
	// unknown only because lock clients hung past their deadline and were
	// stopped, while the checks passed on everything the clients did and
	// every fault was delivered as asked. Some libraries block past their
	// timeout while their server does not answer (Kazoo): that is what
	// they do, said in the result, not a reason to fail the suite or to
	// drop the scenario.
	ClientsMayHang bool `json:"clients_may_hang,omitempty"`
	// AnySeed: the scenario needs its expected violation in at least one
	// of its seeds, not in each. An anomaly that shows in a share of
	// seeds (a capsule's, measured at that rate) is then a check that
	// fails when the anomaly is gone, not one that fails by chance.
	AnySeed bool `json:"any_seed,omitempty"`
}

// String is the expectation as the suite file would say it.
func (e Expect) String() string {
	var parts []string
	if e.Verdict != "" {
		parts = append(parts, string(e.Verdict))
	}
	if e.Mutex != "" {
		parts = append(parts, "mutex "+string(e.Mutex))
	}
	if e.MaxRecovery > 0 {
		parts = append(parts, "recovers ≤ "+e.MaxRecovery.String())
	}
	if e.NeverRecovers {
		parts = append(parts, "never recovers")
	}
	if e.AnySeed {
		parts = append(parts, "in any one seed")
	}
	if e.ClientsMayHang {
		parts = append(parts, "clients may hang")
	}
	return strings.Join(parts, ", ")
}

var expectFields = []string{"verdict", "mutex", "max_recovery", "never_recovers", "clients_may_hang", "any_seed"}

// expect reads `expect: safe`, `expect: unsafe`, or a mapping of
// expectFields.
func (p parser) expect(v *yaml.Node, path string) (*Expect, error) {
	outcome := func(n *yaml.Node, path string) (reports.Outcome, error) {
		o := reports.Outcome(n.Value)
		if n.Kind != yaml.ScalarNode || (o != reports.Safe && o != reports.Unsafe && o != reports.AnyOutcome) {
			return "", p.errAt(n, path, "want %s, %s or %s, or a mapping of %s",
				reports.Safe, reports.Unsafe, reports.AnyOutcome, strings.Join(expectFields, ", "))
		}
		return o, nil
	}
	var e Expect
	if v.Kind == yaml.ScalarNode {
		var err error
		e.Verdict, err = outcome(v, path)
		return &e, err
	}
	kvs, err := p.pairs(v, path, expectFields)
	if err != nil {
		return nil, err
	}
	if len(kvs) == 0 {
		return nil, p.errAt(v, path, "empty: give at least one of %s", strings.Join(expectFields, ", "))
	}
	for _, kv := range kvs {
		switch kv.key.Value {
		case "verdict":
			e.Verdict, err = outcome(kv.val, kv.path)
		case "mutex":
			e.Mutex, err = outcome(kv.val, kv.path)
		case "max_recovery":
			e.MaxRecovery, err = time.ParseDuration(kv.val.Value)
			if kv.val.Kind != yaml.ScalarNode || err != nil || e.MaxRecovery <= 0 {
				err = p.errAt(kv.val, kv.path, "want a positive duration such as 2s")
			}
		case "never_recovers":
			err = p.boolean(kv.val, kv.path, &e.NeverRecovers)
		case "clients_may_hang":
			err = p.boolean(kv.val, kv.path, &e.ClientsMayHang)
		case "any_seed":
			err = p.boolean(kv.val, kv.path, &e.AnySeed)
		}
		if err != nil {
			return nil, err
		}
	}
	if e.MaxRecovery > 0 && e.NeverRecovers {
		return nil, p.errAt(v, path, "max_recovery and never_recovers contradict each other: give one")
	}
	if e.AnySeed && (!e.needsViolation() || e.MaxRecovery > 0 || e.NeverRecovers ||
		e.Verdict == reports.Safe || e.Mutex == reports.Safe) {
		return nil, p.errAt(v, path, "any_seed needs a violation to show (verdict or mutex unsafe) and nothing each seed must keep")
	}
	if e.ClientsMayHang && e.Verdict == "" {
		return nil, p.errAt(v, path, "clients_may_hang qualifies a verdict: give verdict too")
	}
	if e == (Expect{}) {
		return nil, p.errAt(v, path, "expects nothing: never_recovers: false is no expectation")
	}
	return &e, nil
}

// Judge compares a run with the expectation. got says what the run showed
// in the expectation's terms; reasons lists every mismatch (none: pass).
// An unknown verdict matches neither safe nor unsafe. ttl is the run's
// lease TTL: never_recovers is judged only on faults followed by 3×TTL.
func (e Expect) Judge(r reports.Results, ttl time.Duration) (got string, reasons []string) {
	var gots []string
	verdict := r.Verdict
	if e.ClientsMayHang && onlyClientsHung(r) {
		verdict = checker.Valid
	}
	if e.Verdict != "" || e.Mutex == "" {
		g := string(reports.OutcomeOf(r.Verdict))
		if s := r.Checks.Stats; r.DecidedBy == checker.ResourceCheck && s.Lost > 0 {
			g += fmt.Sprintf(" (%d lost update%s)", s.Lost, plural(s.Lost))
		}
		if verdict != r.Verdict {
			g = fmt.Sprintf("unknown (safe on what the clients did; %d client%s hung past the deadline, as allowed)", r.BrokenClients, plural(r.BrokenClients))
		}
		gots = append(gots, g)
	}
	if e.Verdict != "" && reports.OutcomeOf(verdict) != e.Verdict && (e.Verdict != reports.AnyOutcome || verdict == checker.Unknown) {
		switch {
		case verdict == checker.Unknown:
			reasons = append(reasons, "the verdict is unknown ("+unknownWhy(r)+"), neither safe nor unsafe")
		case e.Verdict == reports.Unsafe:
			reasons = append(reasons, "expected unsafe, but the anomaly was not reproduced: the harness lost its teeth")
		default:
			reasons = append(reasons, fmt.Sprintf("expected safe, but the %s check found a violation", r.DecidedBy))
		}
	}
	if e.Mutex != "" {
		m := reports.OutcomeOf(r.Checks.Mutex.Verdict)
		gots = append(gots, "mutex "+string(m))
		if m != e.Mutex && (e.Mutex != reports.AnyOutcome || r.Checks.Mutex.Verdict == checker.Unknown) {
			reasons = append(reasons, fmt.Sprintf("expected the mutex check %s, got %s", e.Mutex, m))
		}
	}
	if e.MaxRecovery > 0 || e.NeverRecovers {
		g, why := e.judgeLiveness(r, ttl)
		gots = append(gots, g)
		reasons = append(reasons, why...)
	}
	return strings.Join(gots, ", "), reasons
}

// needsViolation says whether a run can match e only by finding a
// violation.
func (e Expect) needsViolation() bool {
	return e.Verdict == reports.Unsafe || e.Mutex == reports.Unsafe
}

// stopChecks names the checks whose violations settle e, so that a run
// may end at them (runner's --stop-on-violation): every judged outcome is
// unsafe or any, which a violation satisfies and nothing after it can
// undo. None (nil) when e expects a check to stay safe or bounds the
// recovery: only the run's end can tell those.
func (e Expect) stopChecks(w workloads.Workload) []string {
	if e.MaxRecovery > 0 || e.NeverRecovers || e.Verdict == reports.Safe || e.Mutex == reports.Safe {
		return nil
	}
	var checks []string
	if e.Verdict != "" {
		checks = append(checks, checker.MutexCheck)
		if w.NeedsResource {
			checks[0] = checker.ResourceCheck
		}
	}
	if e.Mutex != "" && !slices.Contains(checks, checker.MutexCheck) {
		checks = append(checks, checker.MutexCheck)
	}
	return checks
}

// onlyClientsHung says whether r is unknown for no reason but lock
// clients that broke: the check that decides passed, every fault was
// delivered as asked, and the run reached its end.
func onlyClientsHung(r reports.Results) bool {
	decided := r.Checks.Mutex
	if r.DecidedBy == checker.ResourceCheck {
		decided = r.Checks.Resource
	}
	return r.Verdict == checker.Unknown && r.BrokenClients > 0 && decided.Verdict == checker.Valid &&
		(r.Health == nil || len(r.Health.Undelivered) == 0 && r.Health.CutShortS == nil)
}

func unknownWhy(r reports.Results) string {
	for _, c := range []checker.Result{r.Checks.Resource, r.Checks.Mutex} {
		if c.Verdict == checker.Unknown && c.Note != "" {
			return c.Note
		}
	}
	return "the checker could not decide"
}

// judgeLiveness checks the recovery after each fault. A fault that began
// too close to the end of the run to show recovery or its absence is not
// judged; a run without any judged fault fails, since it proves nothing.
func (e Expect) judgeLiveness(r reports.Results, ttl time.Duration) (string, []string) {
	end := r.Checks.Start + int64(r.Metrics.SpanSeconds*float64(time.Second))
	// NeverRecovers needs some time after the fault to mean anything.
	window := e.MaxRecovery
	if e.NeverRecovers {
		window = 3 * ttl
	}
	var judged int
	var worst time.Duration
	var never bool
	var reasons []string
	for _, rec := range r.Metrics.Recoveries {
		if rec.NextAcquireMs == nil {
			if time.Duration(end-rec.Start) < window {
				continue
			}
			judged++
			never = true
			if !e.NeverRecovers {
				reasons = append(reasons, fmt.Sprintf("the lock was never acquired again after %s on %s", rec.Fault, rec.Target))
			}
			continue
		}
		judged++
		d := time.Duration(*rec.NextAcquireMs * float64(time.Millisecond))
		worst = max(worst, d)
		if e.NeverRecovers {
			reasons = append(reasons, fmt.Sprintf("expected no recovery, but the lock was acquired %s after %s on %s", d.Round(time.Millisecond), rec.Fault, rec.Target))
		} else if d > e.MaxRecovery {
			reasons = append(reasons, fmt.Sprintf("recovery took %s after %s on %s, over the bound of %s", d.Round(time.Millisecond), rec.Fault, rec.Target, e.MaxRecovery))
		}
	}
	if judged == 0 {
		return "no recovery measured", []string{"no fault started early enough to measure recovery: lengthen duration or shorten fault_interval"}
	}
	got := fmt.Sprintf("recovers ≤ %s", worst.Round(time.Millisecond))
	if never {
		got = "never recovers"
		if worst > 0 {
			got += fmt.Sprintf(" (after some faults; others ≤ %s)", worst.Round(time.Millisecond))
		}
	}
	return got, reasons
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
