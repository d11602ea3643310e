package checker

import (
	"cmp"
	"math"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// Porcupine searches among the orders an op of unknown outcome allows; a
// segment whose every op returned with a known outcome leaves the models
// nothing to choose, and one pass over it decides what the search would.
// Most segments of a long run are such, and deciding them by a sweep makes
// the check cost about what reading the history costs. Segments with an
// unknown outcome, or of a shape the sweep does not take, go to porcupine.
//
// Porcupine orders an op before another only if it returned strictly
// before the other was called; a linearization is then a choice of one
// point per op, inside its closed [call, return], with the model's steps
// legal in the points' order. The sweeps decide whether such points exist.

// sweep decides a segment without porcupine: its result, and false when the
// segment must be searched.
func sweep(s segment) (porcupine.CheckResult, bool) {
	if len(s.ops) == 0 {
		return porcupine.Ok, true
	}
	for _, op := range s.ops {
		// An op returned before its call is no interval: only a damaged
		// history holds one, and porcupine's verdict on it stands.
		if op.Return == history.Never || op.Return < op.Call {
			return porcupine.Unknown, false
		}
	}
	switch s.ops[0].Input.(type) {
	case lockInput:
		return sweepLocks(s)
	case counterInput:
		return sweepCounter(s)
	}
	return porcupine.Unknown, false
}

// core is the part of a hold every linearization covers: from its acquire's
// return to its release's call (a client's acquire takes effect by its
// return, its release not before its call).
type core struct{ from, to int64 }

// sweepLocks decides the mutex model on a segment of acquires and releases
// of known outcome, where each client's ops follow each other (each called
// strictly after its previous one returned) and alternate: acquire ok, then
// a release, ok or refused; a refused release of a client holding nothing
// changes nothing. Then the lock is free of c except in c's holds, and the
// segment is linearizable if and only if the holds' cores are disjoint:
//
//   - If two cores overlap, neither hold can end before the other begins.
//   - If they are disjoint, put each acquire at its return and each release
//     at its call (an instant shared by a release and an acquire ordered
//     release first): the holds follow each other, and a refused release
//     between two holds of its client lies between them.
//
// Anything else (an ok release of a lock not held, an acquire by its
// holder, a client's ops that overlap) is left to porcupine.
func sweepLocks(s segment) (porcupine.CheckResult, bool) {
	ops := inCallOrder(s.ops)
	type client struct {
		holding bool
		from    int64 // the open hold's core start
		last    int64 // the return of the client's previous op
		seen    bool
	}
	clients := map[int]*client{}
	of := func(p int) *client {
		c, ok := clients[p]
		if !ok {
			c = &client{}
			clients[p] = c
		}
		return c
	}
	if s.start != nil {
		holder, ok := s.start.(int)
		if !ok {
			return porcupine.Unknown, false
		}
		if holder != free {
			c := of(holder)
			c.holding, c.from = true, math.MinInt64
		}
	}
	cores := make([]core, 0, len(ops)/2+1)
	for _, op := range ops {
		in := op.Input.(lockInput)
		c := of(in.Process)
		if c.seen && op.Call <= c.last {
			return porcupine.Unknown, false
		}
		c.seen, c.last = true, op.Return
		switch {
		case in.F == history.FAcquire && in.Outcome == history.OK && !c.holding:
			c.holding, c.from = true, op.Return
		case in.F == history.FRelease && c.holding:
			cores = append(cores, core{c.from, op.Call})
			c.holding = false
		case in.F == history.FRelease && in.Outcome == history.Fail:
			// Refused while holding nothing: no step.
		default:
			return porcupine.Unknown, false
		}
	}
	for _, c := range clients {
		if c.holding {
			cores = append(cores, core{c.from, math.MaxInt64})
		}
	}
	slices.SortFunc(cores, func(a, b core) int { return cmp.Compare(a.from, b.from) })
	for i := 1; i < len(cores); i++ {
		if cores[i-1].to > cores[i].from {
			return porcupine.Illegal, true
		}
	}
	return porcupine.Ok, true
}

// sweepCounter decides the counter model on a segment of increments and
// reads of known outcome, from the segment's start value v0. Each increment
// moves the counter from the value it read to the next, so the increments
// must have read v0, v0+1, ... each exactly once and take effect in that
// order, and a read of v must fall between the increments that read v-1
// and v. That fixes the order up to reads of one value, which real time
// orders among themselves (by call). The segment is linearizable if and only
// if that order puts no op before one that returned before it was called.
func sweepCounter(s segment) (porcupine.CheckResult, bool) {
	var v0 int64
	if s.start != nil {
		v, ok := s.start.(int64)
		if !ok || v < 0 {
			return porcupine.Unknown, false
		}
		v0 = v
	}
	var incrs []int // incrs[v-v0]: the increment that read v, or -1
	var reads int
	for _, op := range s.ops {
		in := op.Input.(counterInput)
		if in.Outcome != history.OK || in.Blind {
			return porcupine.Unknown, false
		}
		switch in.F {
		case history.FIncr:
			incrs = append(incrs, -1)
		case history.FRead:
			reads++
		default:
			return porcupine.Unknown, false
		}
	}
	n := int64(len(incrs))
	// slot is where a value read puts an op: increments 0..n-1, reads of
	// v0..v0+n in slots 0..n (before the increment that read the same).
	slot := func(v int64) (int64, bool) {
		if v < v0 || v-v0 > n {
			return 0, false
		}
		return v - v0, true
	}
	readsAt := make([]int, n+2) // counts, then bucket starts
	for i, op := range s.ops {
		in := op.Input.(counterInput)
		k, ok := slot(in.Value)
		switch {
		case !ok || (in.F == history.FIncr && k == n):
			return porcupine.Illegal, true // a value the counter never held
		case in.F == history.FIncr && incrs[k] >= 0:
			return porcupine.Illegal, true // two increments read one value
		case in.F == history.FIncr:
			incrs[k] = i
		default:
			readsAt[k+1]++
		}
	}
	for k := 1; k < len(readsAt); k++ {
		readsAt[k] += readsAt[k-1]
	}
	byValue := make([]int, reads)
	fill := slices.Clone(readsAt)
	for i, op := range s.ops {
		if in := op.Input.(counterInput); in.F == history.FRead {
			k, _ := slot(in.Value)
			byValue[fill[k]] = i
			fill[k]++
		}
	}
	latest := int64(math.MinInt64) // the latest call so far in the order
	next := func(i int) bool {
		op := s.ops[i]
		if op.Return < latest {
			return false
		}
		latest = max(latest, op.Call)
		return true
	}
	for k := int64(0); k <= n; k++ {
		bucket := byValue[readsAt[k]:readsAt[k+1]]
		slices.SortFunc(bucket, func(a, b int) int { return cmp.Compare(s.ops[a].Call, s.ops[b].Call) })
		for _, i := range bucket {
			if !next(i) {
				return porcupine.Illegal, true
			}
		}
		if k < n && !next(incrs[k]) {
			return porcupine.Illegal, true
		}
	}
	return porcupine.Ok, true
}

// inCallOrder returns ops in call order: a lock segment puts the acquires
// still waiting at its cut after the ops that returned by it.
func inCallOrder(ops []porcupine.Operation) []porcupine.Operation {
	byCall := func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) }
	if slices.IsSortedFunc(ops, byCall) {
		return ops
	}
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, byCall)
	return sorted
}
