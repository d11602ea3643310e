package checker

import (
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// Verdict is the outcome of a check. Unknown is an honest answer (the
// checker ran out of time), never to be read as Valid.
type Verdict string

const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown"
)

// Check names.
const (
	MutexCheck    = "mutex"
	ResourceCheck = "resource"
)

// OpRef points at one operation in the history.
type OpRef struct {
	Index   int          `json:"index"` // index of the invoke record
	Process int          `json:"process"`
	F       string       `json:"f"`
	Key     string       `json:"key,omitempty"`
	Outcome history.Type `json:"outcome"`
	Call    int64        `json:"call"`
	Return  int64        `json:"return"`
	Value   *int64       `json:"value,omitempty"`
	Token   int64        `json:"token,omitempty"`
}

// Violation explains one way the history broke a model, with the ops behind
// it and the faults active at the time.
type Violation struct {
	Summary string   `json:"summary"`
	Time    int64    `json:"time"`
	Ops     []OpRef  `json:"ops"`
	Faults  []string `json:"faults,omitempty"`
}

// Result is the outcome of one check.
type Result struct {
	Check   string  `json:"check"`
	Verdict Verdict `json:"verdict"`
	// Ops is the number of operations the model was checked against.
	Ops        int         `json:"ops"`
	Violations []Violation `json:"violations,omitempty"`
	// FirstViolationS is the time of the earliest named violation, in
	// seconds from the start of the history: how long the run took to
	// break the design. Nil when nothing (or nothing with a time) was found.
	FirstViolationS *float64 `json:"first_violation_s,omitempty"`
	Note            string   `json:"note,omitempty"`
	// Visualized says what porcupine's visualization leaves out, when the
	// history is too long to draw whole; empty when it draws everything.
	Visualized string `json:"visualized,omitempty"`

	model   porcupine.Model
	viz     []segment // what the visualization draws
	start   int64     // the history's start: the origin of the times it shows
	timeout time.Duration
}

// ResourceStats counts what happened to the protected resource.
type ResourceStats struct {
	Acknowledged  int    `json:"acknowledged"`  // increments that returned ok
	Rejected      int    `json:"rejected"`      // sections refused for a stale token: at the write, or the read if fenced
	Indeterminate int    `json:"indeterminate"` // writes of unknown outcome
	Final         *int64 `json:"final,omitempty"`
	// Lost is acknowledged increments minus the final value: updates that
	// were acknowledged and are not in the data.
	Lost int `json:"lost"`
}

// Report holds both checks of a run.
type Report struct {
	Mutex    Result          `json:"mutex"`
	Resource Result          `json:"resource"`
	Stats    ResourceStats   `json:"resource_stats"`
	Faults   []history.Fault `json:"faults,omitempty"`
	// Efficacy says, per fault in Faults (same order), whether it took
	// effect: a run whose faults did nothing proves little.
	Efficacy []FaultEffect `json:"efficacy,omitempty"`
	// Lease judges the violations against the run's lease (Options.TTL):
	// a bug of the lock, or a lease that ran out. Nil with no violation.
	Lease *LeaseFinding `json:"lease,omitempty"`
	Start int64         `json:"start"`
}

// Options tune the checks.
type Options struct {
	// Timeout bounds the checks, both models' segments decided side by side
	// against one deadline; a check not done by then is Unknown.
	Timeout time.Duration
	// MaxViolations bounds how many violations are listed per check.
	MaxViolations int
	// TTL is the run's lease, by which Efficacy still blames a node fault
	// for an overlap that begins after it healed; 0 looks at the fault's
	// window only.
	TTL time.Duration
	// Drift is how much faster than the history's clock the servers'
	// clocks may run, as a fraction (measured on --nodes hosts): a lease
	// of TTL on a server may end TTL×Drift early by the history's clock,
	// so the lease is judged that much shorter.
	Drift float64
	// Whole checks each key's operations in one piece and with porcupine
	// alone, as before the checks cut them into segments and swept them:
	// only to compare the two.
	Whole bool
}

// Check runs both checks over a history.
func Check(recs []history.Record, opt Options) Report {
	opt = withDefaults(opt)
	ops := history.Ops(recs)
	faults := history.Faults(recs)
	start := history.Start(recs)
	stream := newStream(opt)
	for i := range ops {
		stream.add(&ops[i])
	}
	rep := Report{Faults: faults, Start: start, Efficacy: efficacy(ops, faults, start, opt.TTL)}
	rep.Mutex, rep.Resource = stream.finish(start, opt.Timeout)
	rep.Stats = resourceStats(ops)
	explain(&rep, ops, opt)
	return rep
}

// explain names the violations behind rep's verdicts and judges them
// against the lease, from ops (in call order): the whole history's, or
// (an Explainer's) those around where the check failed.
func explain(rep *Report, ops []history.Op, opt Options) {
	rep.Mutex.Violations = overlaps(ops, rep.Faults, rep.Start, opt.MaxViolations)
	rep.Resource.Violations = lostUpdates(ops, rep.Faults, rep.Stats, opt.MaxViolations)
	explainUnnamed(&rep.Mutex, "the mutex model found no legal order of the lock operations (see the visualization)")
	explainUnnamed(&rep.Resource, "the counter model found no legal order of the critical sections (see the visualization)")
	rep.Lease = ClassifyLease(ops, rep.Faults, opt.TTL-time.Duration(float64(opt.TTL)*opt.Drift), rep.Start)
	rep.Mutex.FirstViolationS = firstViolation(rep.Mutex.Violations, rep.Start)
	rep.Resource.FirstViolationS = firstViolation(rep.Resource.Violations, rep.Start)
}

// withDefaults fills in the options left zero.
func withDefaults(opt Options) Options {
	if opt.Timeout <= 0 {
		opt.Timeout = time.Minute
	}
	if opt.MaxViolations <= 0 {
		opt.MaxViolations = 20
	}
	return opt
}

// explainUnnamed keeps a porcupine verdict honest when our explainers found
// nothing to name: the verdict stands, and says where to look.
func explainUnnamed(r *Result, why string) {
	if r.Verdict == Invalid && len(r.Violations) == 0 {
		r.Violations = []Violation{{Summary: why}}
	}
	if r.Verdict == Valid {
		// Explanations are heuristics; only porcupine's verdict counts.
		r.Violations = nil
	}
}

// firstViolation returns the earliest violation time in seconds from start;
// violations without a time (porcupine's verdict with no explanation) are
// skipped.
func firstViolation(vs []Violation, start int64) *float64 {
	var first *float64
	for _, v := range vs {
		if v.Time == 0 {
			continue
		}
		s := float64(v.Time-start) / 1e9
		if first == nil || s < *first {
			first = &s
		}
	}
	return first
}

// clientIDs maps processes to porcupine's zero-based client ids; the
// coordinator (negative process) comes last.
func clientIDs(procs map[int]bool) map[int]int {
	sorted := make([]int, 0, len(procs))
	for p := range procs {
		sorted = append(sorted, p)
	}
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if (a < 0) != (b < 0) {
			return b < 0
		}
		return a < b
	})
	ids := map[int]int{}
	for i, p := range sorted {
		ids[p] = i
	}
	return ids
}

func ref(op history.Op) OpRef {
	return OpRef{Index: op.InvokeIndex, Process: op.Process, F: op.F, Key: op.Key, Outcome: op.Outcome,
		Call: op.Call, Return: op.Return, Value: op.Value, Token: op.Token}
}

// faultNames names the faults active at some point in [from, to], or
// ended up to a second before it: a fault that just healed often explains
// what follows.
func faultNames(faults []history.Fault, from, to int64) []string {
	var names []string
	for _, f := range faults {
		if f.Start <= to && from <= f.Stop+int64(time.Second) {
			names = append(names, f.Name+" on "+f.Target)
		}
	}
	return names
}

// Verdict returns the run's verdict: the check of what the workload
// protects. With a resource, the data is what matters (fencing may rightly
// let two clients believe they hold the lock while the data stays safe);
// without one, mutual exclusion itself is the promise.
func (r Report) Verdict(protectsResource bool) Verdict {
	if protectsResource {
		return r.Resource.Verdict
	}
	return r.Mutex.Verdict
}
