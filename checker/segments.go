package checker

import (
	"html"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// Porcupine's search costs memory quadratic in the length of what it checks
// (it keeps a bitset of the linearized ops at every step), so a long run on
// one key cannot be checked whole. The checks therefore cut each key's
// operations into segments at points where every linearization must pass
// through one known state, and check the segments apart, in parallel. The
// cuts are exact: the history is linearizable if and only if every segment
// is, started from its known state (see cutLocks and cutCounter for why).
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

// cutFunc cuts one key's operations (in call order) into segments.
type cutFunc func(ops []porcupine.Operation) []segment

// segmentsOf cuts every key's operations.
func segmentsOf(parts [][]porcupine.Operation, cut cutFunc) []segment {
	var out []segment
	for _, part := range parts {
		out = append(out, cut(part)...)
	}
	return out
}

// whole keeps each key's operations as one segment: the check as it was
// before cutting, kept to compare the two.
func whole(ops []porcupine.Operation) []segment { return []segment{{ops: ops}} }

// calledBy returns how many of ops, from index from on, are called at or
// before t, plus from (ops are in call order).
func calledBy(ops []porcupine.Operation, t int64, from int) int {
	return from + sort.Search(len(ops)-from, func(i int) bool { return ops[from+i].Call > t })
}

// cutLocks cuts a key's lock operations inside holds.
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
func cutLocks(ops []porcupine.Operation) []segment {
	// An op is "unordered" when it is called before (or as) the previous op
	// of its client returns: porcupine orders an op after another only if it
	// is called strictly after the other returns, and the proof above leans
	// on a client's ops following each other.
	unordered := make([]bool, len(ops))
	last := map[int]int64{}
	for i, op := range ops {
		p := op.Metadata.(*history.Op).Process
		// An op that never returned blocks every later cut by maxOther.
		if ret, ok := last[p]; ok && ret != history.Never && ret >= op.Call {
			unordered[i] = true
		}
		last[p] = op.Return
	}
	// Over ops[:i]: the latest return of an op other than an ok acquire, and
	// of an unordered ok acquire.
	maxOther := make([]int64, len(ops)+1)
	maxUnordered := make([]int64, len(ops)+1)
	for i, op := range ops {
		maxOther[i+1], maxUnordered[i+1] = maxOther[i], maxUnordered[i]
		switch {
		case !okAcquire(op):
			maxOther[i+1] = max(maxOther[i], op.Return)
		case unordered[i]:
			maxUnordered[i+1] = max(maxUnordered[i], op.Return)
		}
	}
	var segs []segment
	var start any
	// The current segment is ops[begin-carried:]: the acquires still waiting
	// at the last cut, moved right before ops[begin].
	begin, carried := 0, 0
	var waiting []porcupine.Operation
	for i := 0; i < len(ops); i++ {
		if !okAcquire(ops[i]) || unordered[i] || i-begin+carried < minSegment {
			continue
		}
		cutAt, holder := ops[i].Return, ops[i].Metadata.(*history.Op).Process
		j := calledBy(ops, cutAt, i+1)
		if maxOther[j] > cutAt || maxUnordered[j] > cutAt {
			continue
		}
		// Put the ops returned by cutAt first, in order, and the acquires
		// still waiting after them, right before ops[j]. Only ops before j
		// move, and the cut rules only look at ops from j on.
		seg := ops[begin-carried : j]
		n := 0
		waiting = waiting[:0]
		for _, o := range seg {
			if o.Return <= cutAt {
				seg[n] = o
				n++
			} else {
				waiting = append(waiting, o)
			}
		}
		copy(seg[n:], waiting)
		segs = append(segs, segment{ops: seg[:n:n], start: start})
		start, begin, carried = holder, j, len(waiting)
		i = j - 1
	}
	return append(segs, segment{ops: ops[begin-carried:], start: start})
}

// cutCounter cuts a key's counter operations after critical sections.
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
func cutCounter(ops []porcupine.Operation) []segment {
	n := len(ops)
	// Over ops[:i]: the latest return of an op that returned; the highest
	// value read by an unknown increment; whether a blind increment (value
	// never learned) was called.
	maxRet := make([]int64, n+1)
	maxUnknown := make([]int64, n+1)
	blind := make([]bool, n+1)
	maxUnknown[0] = math.MinInt64
	for i, op := range ops {
		in := op.Input.(counterInput)
		maxRet[i+1], maxUnknown[i+1], blind[i+1] = maxRet[i], maxUnknown[i], blind[i]
		switch {
		case op.Return != history.Never:
			maxRet[i+1] = max(maxRet[i], op.Return)
		case in.Blind:
			blind[i+1] = true
		default:
			maxUnknown[i+1] = max(maxUnknown[i], in.Value)
		}
	}
	// nextReturned[i]: the first op at or after i that returned.
	nextReturned := make([]int, n+1)
	nextReturned[n] = n
	for i := n - 1; i >= 0; i-- {
		nextReturned[i] = nextReturned[i+1]
		if ops[i].Return != history.Never {
			nextReturned[i] = i
		}
	}
	var segs []segment
	var start any
	begin := 0
	for i := 0; i < n; i++ {
		in := ops[i].Input.(counterInput)
		if in.F != history.FIncr || in.Outcome != history.OK || i+1-begin < minSegment {
			continue
		}
		cutAt := ops[i].Return
		j := calledBy(ops, cutAt, i+1)
		if maxRet[i] >= ops[i].Call || nextReturned[i+1] < j || blind[j] || maxUnknown[j] > in.Value {
			continue
		}
		segs = append(segs, segment{ops: ops[begin:j], start: start})
		start, begin = in.Value+1, j
		i = j - 1
	}
	return append(segs, segment{ops: ops[begin:], start: start})
}

func okAcquire(op porcupine.Operation) bool {
	in, ok := op.Input.(lockInput)
	return ok && in.F == history.FAcquire && in.Outcome == history.OK
}

// checkSegments checks every segment, when swept by a sweep where it
// decides (see sweep) and with porcupine otherwise, in parallel, within one
// deadline, and returns each one's result.
func checkSegments(model porcupine.Model, segs []segment, timeout time.Duration, swept bool) []porcupine.CheckResult {
	results := make([]porcupine.CheckResult, len(segs))
	deadline := time.Now().Add(timeout)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(segs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(segs) {
					return
				}
				if swept {
					if res, ok := sweep(segs[i]); ok {
						results[i] = res
						continue
					}
				}
				left := time.Until(deadline)
				if left <= 0 {
					results[i] = porcupine.Unknown
					continue
				}
				results[i] = porcupine.CheckOperationsTimeout(model, segs[i].withStart(), left)
			}
		}()
	}
	wg.Wait()
	return results
}
