package checker

import (
	"math"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// The cutters as they were before they streamed, when each cut a key's
// whole list at once: the tests' oracle that the streaming cutters cut
// exactly where these did.

// modelOps turns ops into the inputs of the mutex and counter models, one
// list per key in key order, each in call order.
func modelOps(ops []history.Op) (lockOps, counterOps [][]porcupine.Operation) {
	procs := map[int]bool{}
	for _, op := range ops {
		procs[op.Process] = true
	}
	ids := clientIDs(procs)
	lock, counter := map[string][]porcupine.Operation{}, map[string][]porcupine.Operation{}
	for i := range ops {
		op := &ops[i]
		in, isLock := modelInput(op)
		if in == nil {
			continue
		}
		p := porcupine.Operation{ClientId: ids[op.Process], Input: in, Call: op.Call, Return: op.Return, Metadata: op}
		if isLock {
			lock[op.Key] = append(lock[op.Key], p)
		} else {
			counter[op.Key] = append(counter[op.Key], p)
		}
	}
	inKeyOrder := func(m map[string][]porcupine.Operation) [][]porcupine.Operation {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, len(keys))
		for i, k := range keys {
			out[i] = m[k]
		}
		return out
	}
	return inKeyOrder(lock), inKeyOrder(counter)
}

// segmentsOf cuts every key's operations with cut, as a check does.
func segmentsOf(parts [][]porcupine.Operation, cut cutFunc) []segment {
	var out []segment
	for _, part := range parts {
		c := cut(func(s segment) { out = append(out, s) })
		for _, op := range part {
			c.add(op)
		}
		c.finish()
	}
	return out
}

// wholeCutOf cuts every key's operations with a cutter of the whole list.
func wholeCutOf(parts [][]porcupine.Operation, cut func([]porcupine.Operation) []segment) []segment {
	var out []segment
	for _, part := range parts {
		out = append(out, cut(slices.Clone(part))...)
	}
	return out
}

// wholeCutLocks is lockCutter on a key's whole list.
func wholeCutLocks(ops []porcupine.Operation) []segment {
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

// wholeCutCounter is counterCutter on a key's whole list.
func wholeCutCounter(ops []porcupine.Operation) []segment {
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
