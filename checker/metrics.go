package checker

import (
	"slices"
	"sort"
	"time"

	"github.com/locktest/locktest/history"
)

// Outcomes counts operations by completion.
type Outcomes struct {
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
}

func (o *Outcomes) add(t history.Type) {
	switch t {
	case history.OK:
		o.OK++
	case history.Fail:
		o.Fail++
	default:
		o.Info++
	}
}

// Recovery is how long the lock stayed unavailable after a fault began:
// the time until a client other than the fault's target acquired it. For a
// killed holder on a lease design it is about the TTL; for a lock without
// expiry it is never (nil).
type Recovery struct {
	Fault         string   `json:"fault"`
	Target        string   `json:"target"`
	Start         int64    `json:"start"`
	NextAcquireMs *float64 `json:"next_acquire_ms"`
	// WatchedMs is how long the clients went on after the fault began (to
	// the last op's completion; 0 when none came after): how much a
	// recovery that never came was given.
	WatchedMs float64 `json:"watched_ms"`
}

// Metrics are the liveness and cost figures of a run, beside safety.
type Metrics struct {
	Acquires   Outcomes `json:"acquires"`
	Releases   Outcomes `json:"releases"`
	Increments Outcomes `json:"increments"`
	// Renewals refused are holds the lock gave up under its holder: a
	// lease a renewing client kept alive and still lost.
	Renewals     Outcomes `json:"renewals,omitzero"`
	AcquireP50Ms float64  `json:"acquire_p50_ms"`
	AcquireP99Ms float64  `json:"acquire_p99_ms"`
	// Throughput is successful acquisitions per second of history.
	Throughput float64 `json:"throughput"`
	// CommandsPerAcquisition is store commands sent by acquires (including
	// refused tries) per successful acquisition.
	CommandsPerAcquisition float64    `json:"commands_per_acquisition"`
	Recoveries             []Recovery `json:"recoveries,omitempty"`
	SpanSeconds            float64    `json:"span_seconds"`
}

// Measure computes Metrics from a history.
func Measure(recs []history.Record) Metrics {
	var m Meter
	ops := history.Ops(recs)
	for i := range ops {
		m.Add(&ops[i])
	}
	var rm RecoveryMeter
	for _, f := range history.Faults(recs) {
		rm.AddFault(f)
	}
	for i := range ops {
		// In call order: no later op returns before this one's call.
		rm.Add(&ops[i], ops[i].Call)
	}
	return m.Metrics(&rm)
}

// Meter computes Metrics op by op, as Measure does for a whole history,
// holding the acquires' latencies (for their percentiles) and not the ops:
// a check that reads the history as it goes measures it on the way.
type Meter struct {
	m           Metrics
	lat         []float64
	cmds        int
	first, last int64
	started     bool
}

// Add counts op, which can no longer change.
func (m *Meter) Add(op *history.Op) {
	if !m.started {
		m.first, m.started = history.Never, true
	}
	m.first = min(m.first, op.Call)
	if op.Completed != history.Never {
		m.last = max(m.last, op.Completed)
	}
	switch op.F {
	case history.FAcquire:
		m.m.Acquires.add(op.Outcome)
		m.cmds += op.Cmds
		if op.Outcome == history.OK {
			m.lat = append(m.lat, float64(op.Return-op.Call)/1e6)
		}
	case history.FRelease:
		m.m.Releases.add(op.Outcome)
	case history.FIncr:
		m.m.Increments.add(op.Outcome)
	case history.FRenew:
		m.m.Renewals.add(op.Outcome)
	}
}

// Metrics returns the metrics of the ops added, with the recoveries r
// measured over the same ops.
func (m *Meter) Metrics(r *RecoveryMeter) Metrics {
	out := m.m
	sort.Float64s(m.lat)
	out.AcquireP50Ms, out.AcquireP99Ms = percentile(m.lat, 0.50), percentile(m.lat, 0.99)
	if m.started && m.last > m.first {
		out.SpanSeconds = float64(m.last-m.first) / float64(time.Second)
		out.Throughput = float64(out.Acquires.OK) / out.SpanSeconds
	}
	if out.Acquires.OK > 0 {
		out.CommandsPerAcquisition = float64(m.cmds) / float64(out.Acquires.OK)
	}
	out.Recoveries = r.recoveries(m.last)
	return out
}

// RecoveryMeter measures each fault's Recovery op by op, learning the
// faults as they come (AddFault), as a check that reads the history as
// it goes does. It holds a time per fault, the faults still waiting for
// their recovery and the acquires of the last moments, not the ops.
type RecoveryMeter struct {
	faults []history.Fault
	target []int
	next   []int64 // the earliest return of a recovering acquire; Never: none yet
	// open are the faults whose recovery an op still to come may bring
	// earlier; recent the ok acquires that returned after the floor, which
	// a fault added later may have begun before.
	open   []int
	recent []acquired
	adds   int
}

// acquired is an ok acquire: its client and return.
type acquired struct {
	process int
	ret     int64
}

// AddFault takes the next fault, in the order their starts were recorded.
func (r *RecoveryMeter) AddFault(f history.Fault) {
	i := len(r.faults)
	r.faults = append(r.faults, f)
	r.target, r.next = append(r.target, targetClient(f.Target)), append(r.next, history.Never)
	for _, a := range r.recent {
		r.offer(i, a)
	}
	r.open = append(r.open, i)
}

// offer makes a the recovery of fault i if it is the earliest so far.
func (r *RecoveryMeter) offer(i int, a acquired) {
	if r.faults[i].Start < a.ret && a.process != r.target[i] && a.ret < r.next[i] {
		r.next[i] = a.ret
	}
}

// Add takes an op, which can no longer change; floor is a time no op
// still to come returns before, and no fault still to come begins after
// one that returned later than it. A fault's recovery is settled by it:
// looking only at the faults not settled, and keeping only the acquires
// after it, keeps a long history with many faults linear.
func (r *RecoveryMeter) Add(op *history.Op, floor int64) {
	if op.F != history.FAcquire || op.Outcome != history.OK {
		return
	}
	a := acquired{op.Process, op.Return}
	r.recent = append(r.recent, a)
	if r.adds++; r.adds%256 == 0 {
		r.recent = slices.DeleteFunc(r.recent, func(a acquired) bool { return a.ret <= floor })
	}
	r.open = slices.DeleteFunc(r.open, func(i int) bool {
		r.offer(i, a)
		return r.next[i] <= floor
	})
}

// recoveries returns the faults' recoveries; last is the last op's
// completion, up to which each fault was watched.
func (r *RecoveryMeter) recoveries(last int64) []Recovery {
	var out []Recovery
	for i, f := range r.faults {
		rec := Recovery{Fault: f.Name, Target: f.Target, Start: f.Start, WatchedMs: max(0, float64(last-f.Start)/1e6)}
		if r.next[i] != history.Never {
			ms := float64(r.next[i]-f.Start) / 1e6
			rec.NextAcquireMs = &ms
		}
		out = append(out, rec)
	}
	return out
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}
