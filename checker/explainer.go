package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/locktest/locktest/history"
)

// A Checker decides a history without holding it, but the explanations
// (the violations named, the faults' efficacy, the lease class) look at
// ops side by side. An Explainer gives them what they look at on a second
// reading of the stretches of the history they need (Stretches): around
// each fault, the ops of its window, for as long as it takes to judge it;
// around where the check failed, the ops there, kept to the end. How far
// around is the history's reach, learned on the first reading: the
// longest op, hold and pause between a client's records, and the lease,
// beyond which none of the explainers looks from an op or a fault.

// span is a stretch of history time, from and to included.
type span struct{ from, to int64 }

// span is the stretch from the segment's first call to its last op's
// end (its call, for an op that never ended).
func (s segment) span() span {
	out := span{from: history.Never}
	for _, o := range s.ops {
		op, ok := o.Metadata.(*history.Op)
		if !ok { // a segment's known start
			continue
		}
		out.from = min(out.from, op.Call)
		out.to = max(out.to, op.Call)
		if op.Completed != history.Never {
			out.to = max(out.to, op.Completed)
		}
	}
	return out
}

// spans keeps the keep earliest spans added (dropped counts the others):
// a run that broke everywhere is explained by its first violations, as
// MaxViolations lists only those.
type spans struct {
	keep    int
	list    []span
	dropped int
}

func (s *spans) add(sp span) {
	if sp.from == history.Never {
		return
	}
	s.list = append(s.list, sp)
	if len(s.list) > 2*s.keep {
		s.trim()
	}
}

// trim keeps the earliest keep spans.
func (s *spans) trim() {
	slices.SortFunc(s.list, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	if len(s.list) > s.keep {
		s.dropped += len(s.list) - s.keep
		s.list = s.list[:s.keep]
	}
}

// reach measures, on the first reading, how far apart in time the ops an
// explanation relates can lie.
type reach struct {
	latest map[int]int64     // each client's latest record
	held   map[holdKey]int64 // each ok acquire's return, until its release
	// gap, op and hold are the longest pause between a client's records,
	// op (call to completion) and hold (acquire's return to release).
	gap, op, hold int64
}

type holdKey struct {
	process int
	key     string
}

func (r *reach) record(rec *history.Record) {
	if rec.Process == history.NemesisProcess {
		return
	}
	if r.latest == nil {
		r.latest, r.held = map[int]int64{}, map[holdKey]int64{}
	}
	if t, ok := r.latest[rec.Process]; ok {
		r.gap = max(r.gap, rec.Time-t)
	}
	r.latest[rec.Process] = max(r.latest[rec.Process], rec.Time)
}

func (r *reach) begun(op *history.Op) {
	if op.F != history.FRelease && op.F != history.FCrash {
		return
	}
	k := holdKey{op.Process, op.Key}
	if from, ok := r.held[k]; ok {
		r.hold = max(r.hold, op.Call-from)
		delete(r.held, k)
	}
}

func (r *reach) ended(op *history.Op) {
	if op.Completed != history.Never {
		r.op = max(r.op, op.Completed-op.Call)
	}
	if op.F == history.FAcquire && op.Outcome == history.OK && r.held != nil {
		r.held[holdKey{op.Process, op.Key}] = op.Return
	}
}

// margin is how far around a fault or a failed stretch an Explainer
// keeps ops: a lease, a pause, an op and a hold, and a second to spare.
func (r *reach) margin(ttl time.Duration) int64 {
	return int64(ttl) + r.gap + r.op + r.hold + int64(time.Second)
}

// Metrics returns the metrics of the ops checked (Measure's), once Report
// has ended the check.
func (c *Checker) Metrics() Metrics { return c.meter.Metrics(&c.recoveries) }

// Explainer adds to a Checker's Report what Check explains from the whole
// history (violations, efficacy, lease), on a second reading of the same
// history, holding only the ops around its faults and where the check
// failed (see reach).
type Explainer struct {
	rep    Report
	opt    Options
	margin int64
	pairs  history.Pairing
	latest int64
	// windows are the failed stretches widened by margin, merged, in
	// time order; kept the ops called in them, and, so that no hold is
	// cut short, the release ending each of their ok acquires' holds
	// (open says which are still awaited). last is the op that ends the
	// history (the Checker's), whose end a hold never released lasts to.
	windows []span
	kept    []*history.Op
	open    map[holdKey]bool
	last    *history.Op
	// judged counts the faults judged so far (in start order); recent
	// holds the ops called since the window of the first not judged.
	judged  int
	recent  []*history.Op
	dropped int
}

// Explainer returns the explainer of rep, which Report returned.
func (c *Checker) Explainer(rep Report) *Explainer {
	e := &Explainer{rep: rep, opt: c.opt, margin: c.reach.margin(c.opt.TTL), open: map[holdKey]bool{}, last: c.last}
	e.rep.Efficacy = make([]FaultEffect, 0, len(rep.Faults))
	var failed []span
	for _, m := range []*modelCheck{c.stream.mutex, c.stream.resource} {
		m.failed.trim()
		failed = append(failed, m.failed.list...)
		e.dropped += m.failed.dropped
	}
	slices.SortFunc(failed, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	for _, sp := range failed {
		sp = span{sp.from - e.margin, sp.to + e.margin}
		if n := len(e.windows); n > 0 && sp.from <= e.windows[n-1].to {
			e.windows[n-1].to = max(e.windows[n-1].to, sp.to)
			continue
		}
		e.windows = append(e.windows, sp)
	}
	return e
}

// Stretches returns, in time order and apart, the stretches of history
// time [from, to] whose records the second reading must add, in the order
// they were written: none when there is nothing to explain (no fault, no
// verdict but valid). A stretch reaches past the ops it is for by a
// margin, for their completions and their holds' releases.
func (e *Explainer) Stretches() [][2]int64 {
	var all []span
	for _, w := range e.windows {
		all = append(all, span{w.from, w.to + 2*e.margin})
	}
	for _, f := range e.rep.Faults {
		all = append(all, span{f.Start - e.margin, f.Stop + 2*e.margin})
	}
	slices.SortFunc(all, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var out [][2]int64
	for _, sp := range all {
		if n := len(out); n > 0 && sp.from <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], sp.to)
			continue
		}
		out = append(out, [2]int64{sp.from, sp.to})
	}
	return out
}

// Add takes the next record of the second reading: those of the
// Stretches, in order.
func (e *Explainer) Add(r *history.Record) {
	e.latest = max(e.latest, r.Time)
	if begun, _ := e.pairs.Add(r); begun != nil {
		e.begin(begun)
	}
	for e.judged < len(e.rep.Faults) && e.latest > e.rep.Faults[e.judged].Stop+2*e.margin+int64(history.AppendSkew) {
		e.judge()
	}
}

// begin keeps op, just called, where an explanation may look at it.
func (e *Explainer) begin(op *history.Op) {
	if e.judged < len(e.rep.Faults) {
		e.recent = append(e.recent, op)
	}
	k := holdKey{op.Process, op.Key}
	switch i := sort.Search(len(e.windows), func(i int) bool { return e.windows[i].to >= op.Call }); {
	case i < len(e.windows) && e.windows[i].from <= op.Call:
		e.kept = append(e.kept, op)
		if op.F == history.FAcquire {
			e.open[k] = true
		}
	case (op.F == history.FRelease || op.F == history.FCrash) && e.open[k]:
		e.kept = append(e.kept, op)
		delete(e.open, k)
	}
}

// judge judges the first fault not judged, on the ops called in its
// window, and drops the ops no fault still to judge looks at.
func (e *Explainer) judge() {
	f := e.rep.Faults[e.judged]
	e.judged++
	var ops []*history.Op
	for _, op := range e.recent {
		if op.Call >= f.Start-e.margin && op.Call <= f.Stop+e.margin {
			ops = append(ops, op)
		}
	}
	e.rep.Efficacy = append(e.rep.Efficacy, efficacy(copiedInCallOrder(ops), []history.Fault{f}, e.rep.Start, e.opt.TTL)...)
	if e.judged == len(e.rep.Faults) {
		e.recent = nil
		return
	}
	from := e.rep.Faults[e.judged].Start - e.margin
	e.recent = slices.DeleteFunc(e.recent, func(op *history.Op) bool { return op.Call < from })
}

// copiedInCallOrder copies ops, taken in the order they were called (as records
// came), into call order, as history.Ops gives them.
func copiedInCallOrder(ops []*history.Op) []history.Op {
	out := make([]history.Op, len(ops))
	for i, op := range ops {
		out[i] = *op
	}
	slices.SortStableFunc(out, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	return out
}

// Report ends the second reading: the history ended with the last record
// added. It returns the Checker's report with Check's explanations.
func (e *Explainer) Report() Report {
	e.pairs.End()
	for e.judged < len(e.rep.Faults) {
		e.judge()
	}
	kept := e.kept
	if e.last != nil && !slices.ContainsFunc(kept, func(op *history.Op) bool { return op.InvokeIndex == e.last.InvokeIndex }) {
		kept = append(kept, e.last)
	}
	rep := e.rep
	explain(&rep, copiedInCallOrder(kept), e.opt)
	if e.dropped > 0 {
		note := fmt.Sprintf("violations named, and the lease judged, from the first %d stretches where each check failed; %d more were not looked at",
			e.opt.MaxViolations, e.dropped)
		for _, r := range []*Result{&rep.Mutex, &rep.Resource} {
			if r.Verdict != Valid {
				r.Note = joinNote(r.Note, note)
			}
		}
	}
	return rep
}

// joinNote adds b to note a.
func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
