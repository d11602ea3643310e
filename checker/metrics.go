package checker

import (
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
	var m Metrics
	ops := history.Ops(recs)
	var lat []float64
	var cmds int
	var first, last int64 = history.Never, 0
	for _, op := range ops {
		first = min(first, op.Call)
		if op.Completed != history.Never {
			last = max(last, op.Completed)
		}
		switch op.F {
		case history.FAcquire:
			m.Acquires.add(op.Outcome)
			cmds += op.Cmds
			if op.Outcome == history.OK {
				lat = append(lat, float64(op.Return-op.Call)/1e6)
			}
		case history.FRelease:
			m.Releases.add(op.Outcome)
		case history.FIncr:
			m.Increments.add(op.Outcome)
		case history.FRenew:
			m.Renewals.add(op.Outcome)
		}
	}
	sort.Float64s(lat)
	m.AcquireP50Ms, m.AcquireP99Ms = percentile(lat, 0.50), percentile(lat, 0.99)
	if last > first {
		m.SpanSeconds = float64(last-first) / float64(time.Second)
		m.Throughput = float64(m.Acquires.OK) / m.SpanSeconds
	}
	if m.Acquires.OK > 0 {
		m.CommandsPerAcquisition = float64(cmds) / float64(m.Acquires.OK)
	}
	for _, f := range history.Faults(recs) {
		r := Recovery{Fault: f.Name, Target: f.Target, Start: f.Start, WatchedMs: max(0, float64(last-f.Start)/1e6)}
		target := targetClient(f.Target)
		for _, op := range ops {
			if op.F == history.FAcquire && op.Outcome == history.OK && op.Return > f.Start && op.Process != target {
				ms := float64(op.Return-f.Start) / 1e6
				if r.NextAcquireMs == nil || ms < *r.NextAcquireMs {
					r.NextAcquireMs = &ms
				}
			}
		}
		m.Recoveries = append(m.Recoveries, r)
	}
	return m
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}
