package checker

import (
	"html"
	"math"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// Porcupine's search costs memory quadratic in the length of what it checks
// (it keeps a bitset of the linearized ops at every step), so a long run on
// one key cannot be checked whole. The checks therefore cut each key's
// operations into segments at points where every linearization must pass
// through one known state, and check the segments apart, in parallel. The
// cuts are exact: the history is linearizable if and only if every segment
// is, started from its known state (see lockCutter and counterCutter for why).
//
// An operation that never returns (an unknown outcome, a crash) may take
// effect at any later time, so once one is called on a key, the locks of
// that key are not cut any more; a blind increment does the same to the
// counter. The rest of that key is then one segment.

// minSegment is the fewest operations a segment gets before the next cut:
// tiny segments would cost more in porcupine's per-check setup than they
// save. Tests lower it to cut small histories wherever the rules allow.
var minSegment = 200

// segment is a stretch of one key's operations, in call order, that
// porcupine checks on its own.
type segment struct {
	ops []porcupine.Operation
	// start is the model state every linearization is in when the segment
	// begins; nil: the model's initial state.
	start any
}

// segmentStart is the input of the op put first in a segment that begins
// after a cut: it sets the state the cut proved, so that one model checks
// (and draws) every segment.
type segmentStart struct{ State any }

// segmented extends a model with segmentStart ops.
func segmented(m porcupine.NondeterministicModel) porcupine.Model {
	step, describeOp, describeState := m.Step, m.DescribeOperation, m.DescribeState
	m.Partition = nil
	m.Step = func(state, input, output any) []any {
		if s, ok := input.(segmentStart); ok {
			return []any{s.State}
		}
		return step(state, input, output)
	}
	m.DescribeOperation = func(input, output any) string {
		if s, ok := input.(segmentStart); ok {
			return "known: " + describeState(s.State)
		}
		return describeOp(input, output)
	}
	// Porcupine's page inserts state descriptions as HTML (operation
	// descriptions as text): escaped, whatever a model puts in them.
	m.DescribeState = func(state any) string { return html.EscapeString(describeState(state)) }
	return m.ToModel()
}

// withStart returns the segment's ops, led by a segmentStart op when its
// state is not the initial one.
func (s segment) withStart() []porcupine.Operation {
	if s.start == nil || len(s.ops) == 0 {
		return s.ops
	}
	first := s.ops[0].Call
	for _, op := range s.ops {
		first = min(first, op.Call)
	}
	// Returns before every op of the segment is called: it comes first in
	// every linearization.
	start := porcupine.Operation{ClientId: s.ops[0].ClientId, Input: segmentStart{s.start}, Call: first - 1, Return: first - 1}
	return append([]porcupine.Operation{start}, s.ops...)
}

// cutter cuts one key's operations into segments as they come, in call
// order, handing each segment on once no later op can change it: a check
// then holds the open segment of each key, not the key's whole history.
type cutter interface {
	add(op porcupine.Operation)
	// finish hands on the rest: no op comes after.
	finish()
}

// cutFunc makes a key's cutter, which hands its segments to emit in order.
type cutFunc func(emit func(segment)) cutter

// whole keeps each key's operations as one segment: the check as it was
// before cutting, kept to compare the two.
func whole(emit func(segment)) cutter { return &uncut{emit: emit} }

type uncut struct {
	emit func(segment)
	ops  []porcupine.Operation
}

func (u *uncut) add(op porcupine.Operation) { u.ops = append(u.ops, op) }
func (u *uncut) finish()                    { u.emit(segment{ops: u.ops}) }

// calledBy returns how many of ops, from index from on, are called at or
// before t, plus from (ops are in call order).
func calledBy(ops []porcupine.Operation, t int64, from int) int {
	return from + sort.Search(len(ops)-from, func(i int) bool { return ops[from+i].Call > t })
}

// lockCutter cuts a key's lock operations inside holds.
//
// Take an ok acquire a by client c returning at t, such that the ops called
// by t, other than ok acquires, have all returned by t (so no op of unknown
// outcome, which never returns, was called yet), and a and the acquires
// still waiting at t were each called after their client's previous op
// returned. Split the ops into B, those returned by t (a among them), and
// A, the rest.
//
//   - Every legal order of B ends with c holding the lock: after a, nothing
//     in B can free it (c's own earlier ops precede a; other clients'
//     releases cannot free c's lock).
//   - In every legal order of the whole history, every op of A comes after
//     every op of B. Ops called after t do by real time. The others are ok
//     acquires of other clients d still waiting at t. Such an acquire cannot
//     take effect before a: d would still hold the lock when a takes effect,
//     for nothing could free it in between (d's releases come after its
//     acquire returns, after t, and there is no crash or unknown release).
//     So it takes effect after c's hold is freed, by an op of c called
//     after t, hence after all of B.
//
// So the history is linearizable if and only if B is and A is from "held by
// c". A's ops keep their call times: within A they order nothing.
//
// The cut at a is certain once an op called after t has come: the rule
// looks at the ops called by t only.
type lockCutter struct {
	emit func(segment)
	// ops is the open segment: the acquires still waiting at the last
	// cut, then the ops since, in call order; facts[k] is about ops[k].
	ops   []porcupine.Operation
	facts []lockFacts
	next  int // the next op of ops to try as a cut
	start any
	// last is each client's latest return; maxOther and maxUnordered are
	// lockFacts' over every op so far.
	last                   map[int]int64
	maxOther, maxUnordered int64
	waiting                []int // scratch: indexes of the acquires a cut carries over
}

// lockFacts is what the cut rule needs to know of an op and the ops up to
// it.
type lockFacts struct {
	// unordered: called before (or as) the previous op of its client
	// returned. Porcupine orders an op after another only if it is called
	// strictly after the other returns, and the proof above leans on a
	// client's ops following each other.
	unordered bool
	// The latest return, over the ops up to this one, of an op other than
	// an ok acquire, and of an unordered ok acquire.
	maxOther, maxUnordered int64
}

// cutLocks makes a key's lockCutter.
func cutLocks(emit func(segment)) cutter { return &lockCutter{emit: emit, last: map[int]int64{}} }

func (c *lockCutter) add(op porcupine.Operation) {
	var f lockFacts
	p := op.Metadata.(*history.Op).Process
	// An op that never returned blocks every later cut by maxOther.
	if ret, ok := c.last[p]; ok && ret != history.Never && ret >= op.Call {
		f.unordered = true
	}
	c.last[p] = op.Return
	switch {
	case !okAcquire(op):
		c.maxOther = max(c.maxOther, op.Return)
	case f.unordered:
		c.maxUnordered = max(c.maxUnordered, op.Return)
	}
	f.maxOther, f.maxUnordered = c.maxOther, c.maxUnordered
	c.ops, c.facts = append(c.ops, op), append(c.facts, f)
	c.cut(false)
}

func (c *lockCutter) finish() {
	c.cut(true)
	c.emit(segment{ops: c.ops, start: c.start})
	c.ops, c.facts = nil, nil
}

// cut cuts wherever the rule allows, up to the first op whose cut is not
// certain yet (all of them when final).
func (c *lockCutter) cut(final bool) {
	for ; c.next < len(c.ops); c.next++ {
		i := c.next
		if !okAcquire(c.ops[i]) || c.facts[i].unordered || i < minSegment {
			continue
		}
		cutAt, holder := c.ops[i].Return, c.ops[i].Metadata.(*history.Op).Process
		j := calledBy(c.ops, cutAt, i+1)
		if j == len(c.ops) && !final {
			return // an op still to come may be called by cutAt
		}
		if c.facts[j-1].maxOther > cutAt || c.facts[j-1].maxUnordered > cutAt {
			continue
		}
		// The ops returned by cutAt make the segment, in order; the acquires
		// still waiting lead the next one, before ops[j]. The rule never
		// looks back before ops[j] again.
		seg := make([]porcupine.Operation, 0, j)
		c.waiting = c.waiting[:0]
		for k, o := range c.ops[:j] {
			if o.Return <= cutAt {
				seg = append(seg, o)
			} else {
				c.waiting = append(c.waiting, k)
			}
		}
		c.emit(segment{ops: seg, start: c.start})
		c.start = holder
		n := len(c.waiting)
		for k, w := range c.waiting { // w >= k: moved down in order
			c.ops[k], c.facts[k] = c.ops[w], c.facts[w]
		}
		c.ops, c.facts = shift(c.ops, n, j), shift(c.facts, n, j)
		c.next = n - 1
	}
}

// shift moves s[from:] down to s[to:] (to <= from) and clears what is left
// past it, so that dropped ops are not kept alive.
func shift[T any](s []T, to, from int) []T {
	n := copy(s[to:], s[from:])
	clear(s[to+n:])
	return s[:to+n]
}

// counterCutter cuts a key's counter operations after critical sections.
//
// Take an ok increment L that read v and returned at t, such that every
// other op called by t returned before L was called, except increments of
// unknown outcome that read at most v (none of them blind). Split the ops
// into B, those called by t, and A, the rest. The counter never decreases.
//
//   - Every legal order of B ends with the counter at v+1: L comes after
//     every other op that returned, and an unknown increment after L finds
//     v+1, not the value it read, so it changes nothing.
//   - In every legal order of the whole history, A's ops come after B's,
//     except unknown increments of B that may be placed later; there they
//     find at least v+1 and change nothing, so they can be moved to the end
//     of B.
//
// So the history is linearizable if and only if B is and A is from v+1.
// As for locks, the cut at L is certain once an op called after t has come.
type counterCutter struct {
	emit func(segment)
	// ops is the open segment, in call order; facts[k] is about ops[k].
	ops   []porcupine.Operation
	facts []counterFacts
	next  int
	start any
	// The running values of counterFacts.
	maxRet, maxUnknown int64
	blind              bool
}

// counterFacts is what the cut rule needs to know of the ops up to one.
type counterFacts struct {
	// maxRet: the latest return of an op before this one that returned.
	maxRet int64
	// Over the ops up to this one: the highest value read by an unknown
	// increment; whether a blind increment (value never learned) was
	// called.
	maxUnknown int64
	blind      bool
}

// cutCounter makes a key's counterCutter.
func cutCounter(emit func(segment)) cutter {
	return &counterCutter{emit: emit, maxUnknown: math.MinInt64}
}

func (c *counterCutter) add(op porcupine.Operation) {
	in := op.Input.(counterInput)
	f := counterFacts{maxRet: c.maxRet}
	switch {
	case op.Return != history.Never:
		c.maxRet = max(c.maxRet, op.Return)
	case in.Blind:
		c.blind = true
	default:
		c.maxUnknown = max(c.maxUnknown, in.Value)
	}
	f.maxUnknown, f.blind = c.maxUnknown, c.blind
	c.ops, c.facts = append(c.ops, op), append(c.facts, f)
	c.cut(false)
}

func (c *counterCutter) finish() {
	c.cut(true)
	c.emit(segment{ops: c.ops, start: c.start})
	c.ops, c.facts = nil, nil
}

// cut cuts wherever the rule allows, up to the first op whose cut is not
// certain yet (all of them when final).
func (c *counterCutter) cut(final bool) {
	for ; c.next < len(c.ops); c.next++ {
		i := c.next
		in := c.ops[i].Input.(counterInput)
		if in.F != history.FIncr || in.Outcome != history.OK || i+1 < minSegment {
			continue
		}
		cutAt := c.ops[i].Return
		j := calledBy(c.ops, cutAt, i+1)
		if j == len(c.ops) && !final {
			return // an op still to come may be called by cutAt
		}
		if c.facts[i].maxRet >= c.ops[i].Call || anyReturned(c.ops[i+1:j]) || c.facts[j-1].blind || c.facts[j-1].maxUnknown > in.Value {
			continue
		}
		c.emit(segment{ops: slices.Clone(c.ops[:j]), start: c.start})
		c.start = in.Value + 1
		c.ops, c.facts = shift(c.ops, 0, j), shift(c.facts, 0, j)
		c.next = -1
	}
}

// anyReturned reports whether one of ops returned.
func anyReturned(ops []porcupine.Operation) bool {
	return slices.ContainsFunc(ops, func(op porcupine.Operation) bool { return op.Return != history.Never })
}

func okAcquire(op porcupine.Operation) bool {
	in, ok := op.Input.(lockInput)
	return ok && in.F == history.FAcquire && in.Outcome == history.OK
}
