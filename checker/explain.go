package checker

import (
	"fmt"
	"sort"

	"github.com/locktest/locktest/history"
)

// hold is an interval in which a client believed it held a lock: from its
// acquire returning ok to its release being invoked (or the end).
type hold struct {
	acquire *history.Op
	release *history.Op
	from    int64
	to      int64
}

// Holds returns, per key, the intervals in which each client believed it
// held the lock. Reports draw them; overlaps explain mutex violations.
func Holds(ops []history.Op) map[string][]Hold {
	out := map[string][]Hold{}
	for _, h := range holds(ops) {
		out[h.acquire.Key] = append(out[h.acquire.Key], Hold{
			Process: h.acquire.Process, From: h.from, To: h.to, Token: h.acquire.Token,
			Released: h.release != nil && h.release.Outcome == history.OK,
		})
	}
	return out
}

// Hold is one believed-holder interval.
type Hold struct {
	Process  int   `json:"process"`
	From     int64 `json:"from"`
	To       int64 `json:"to"`
	Token    int64 `json:"token,omitempty"`
	Released bool  `json:"released"` // false: the release was refused, unknown or never sent
}

// Contested returns the stretches of the holds during which another client
// also believed it held the same lock: the pieces a timeline draws in red.
// Each piece keeps the Process, Token and Released of its hold. Holds that
// only touch at an instant do not overlap. of[n] is the index in hs of the
// hold of piece n.
//
// Each hold is compared only with the holds that may overlap it, so that a
// long history of orderly holds costs n log n, not n².
func Contested(hs []Hold) (pieces []Hold, of []int) {
	byFrom := make([]int, len(hs))
	for i := range byFrom {
		byFrom[i] = i
	}
	sort.SliceStable(byFrom, func(x, y int) bool { return hs[byFrom[x]].From < hs[byFrom[y]].From })
	// reach[k]: the latest end among the holds byFrom[:k+1].
	reach := make([]int64, len(hs))
	for k, i := range byFrom {
		reach[k] = hs[i].To
		if k > 0 {
			reach[k] = max(reach[k], reach[k-1])
		}
	}
	for i, a := range hs {
		var cuts [][2]int64
		overlap := func(j int) {
			if b := hs[j]; j != i && a.Process != b.Process {
				if from, to := max(a.From, b.From), min(a.To, b.To); from < to {
					cuts = append(cuts, [2]int64{from, to})
				}
			}
		}
		// The holds starting before a ends, back to where none earlier
		// reaches past a's start.
		end := sort.Search(len(byFrom), func(k int) bool { return hs[byFrom[k]].From >= a.To })
		for k := end - 1; k >= 0 && reach[k] > a.From; k-- {
			overlap(byFrom[k])
		}
		sort.Slice(cuts, func(x, y int) bool { return cuts[x][0] < cuts[y][0] })
		for k := 0; k < len(cuts); {
			piece := a
			piece.From, piece.To = cuts[k][0], cuts[k][1]
			for k++; k < len(cuts) && cuts[k][0] <= piece.To; k++ {
				piece.To = max(piece.To, cuts[k][1])
			}
			pieces = append(pieces, piece)
			of = append(of, i)
		}
	}
	return pieces, of
}

func holds(ops []history.Op) []hold {
	var end int64
	for _, op := range ops {
		end = max(end, op.Call)
		if op.Completed != history.Never {
			end = max(end, op.Completed)
		}
	}
	type pk struct {
		process int
		key     string
	}
	open := map[pk]*hold{}
	var out []hold
	for i := range ops { // in call order
		op := &ops[i]
		k := pk{op.Process, op.Key}
		switch op.F {
		case history.FAcquire:
			if op.Outcome == history.OK {
				open[k] = &hold{acquire: op, from: op.Return, to: end}
			}
		case history.FRelease, history.FCrash: // a dead client believes nothing
			if h, ok := open[k]; ok {
				h.release, h.to = op, op.Call
				out = append(out, *h)
				delete(open, k)
			}
		}
	}
	for _, h := range open {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from < out[j].from })
	return out
}

// overlaps names the holds during which other clients also believed they
// held the same lock: one violation per stale hold, listing the clients
// that acquired the lock while it lasted.
func overlaps(ops []history.Op, faults []history.Fault, start int64, limit int) []Violation {
	hs := holds(ops)
	var out []Violation
	for i, a := range hs {
		var others []hold
		for j := i + 1; j < len(hs) && hs[j].from < a.to; j++ {
			if b := hs[j]; b.acquire.Key == a.acquire.Key && b.acquire.Process != a.acquire.Process {
				others = append(others, b)
			}
		}
		if len(others) == 0 {
			continue
		}
		procs := map[int]bool{}
		v := Violation{Time: others[0].from, Ops: []OpRef{ref(*a.acquire)}, Faults: faultNames(faults, others[0].from, min(a.to, others[0].to))}
		if a.release != nil {
			v.Ops = append(v.Ops, ref(*a.release))
		}
		for k, b := range others {
			procs[b.acquire.Process] = true
			if k < 4 {
				v.Ops = append(v.Ops, ref(*b.acquire))
			}
		}
		v.Summary = fmt.Sprintf("c%d believed it held %q from %s to %s while %d other client(s) acquired it %d time(s)",
			a.acquire.Process, a.acquire.Key, Seconds(a.from, start), Seconds(a.to, start), len(procs), len(others))
		out = append(out, v)
		if len(out) >= limit {
			break
		}
	}
	return out
}

// Seconds formats history time t as seconds since start, the history's
// first record: the one origin of every time a summary, report, plot or
// visualization shows, so that a violation's times and its ops' agree.
func Seconds(t, start int64) string { return fmt.Sprintf("%.3fs", float64(t-start)/1e9) }

func resourceStats(ops []history.Op) ResourceStats {
	var s ResourceStats
	for i := range ops {
		s.add(&ops[i])
	}
	return s.settled()
}

// add counts op.
func (s *ResourceStats) add(op *history.Op) {
	switch {
	case op.F == history.FIncr && op.Outcome == history.OK:
		s.Acknowledged++
	case op.F == history.FIncr && op.Outcome == history.Fail && op.Error == history.RejectedError:
		s.Rejected++
	case op.F == history.FIncr && op.Outcome == history.Info:
		s.Indeterminate++
	case op.F == history.FRead && op.Outcome == history.OK && op.Value != nil:
		if s.Final == nil {
			s.Final = new(int64)
		}
		*s.Final += *op.Value // one final read per key
	}
}

// settled is s with Lost counted, once every op is.
func (s ResourceStats) settled() ResourceStats {
	if s.Final != nil {
		s.Lost = max(0, s.Acknowledged-int(*s.Final))
	}
	return s
}

// lostUpdates names critical sections that read the same value: each such
// group wrote the same v+1, so all but one update was lost.
// readTwice groups the acknowledged critical sections that read the same
// value of one key (each group lost all but one of its updates), in the
// order of their first reader; each group lists indexes into ops.
func readTwice(ops []history.Op) [][]int {
	type rk struct {
		key   string
		value int64
	}
	// Most values are read once: remember the first reader of each, and
	// gather groups only for values read again.
	first := map[rk]int{}
	groups := map[rk][]int{}
	var order []rk
	for i, op := range ops {
		if op.F != history.FIncr || op.Outcome != history.OK || op.Value == nil {
			continue
		}
		k := rk{op.Key, *op.Value}
		j, seen := first[k]
		switch {
		case !seen:
			first[k] = i
		case len(groups[k]) == 0:
			groups[k] = []int{j, i}
			order = append(order, k)
		default:
			groups[k] = append(groups[k], i)
		}
	}
	// Groups in the order of their first reader, as they happened.
	sort.SliceStable(order, func(x, y int) bool { return first[order[x]] < first[order[y]] })
	out := make([][]int, len(order))
	for i, k := range order {
		out[i] = groups[k]
	}
	return out
}

func lostUpdates(ops []history.Op, faults []history.Fault, s ResourceStats, limit int) []Violation {
	var out []Violation
	for _, g := range readTwice(ops) {
		op := ops[g[0]]
		v := Violation{
			Summary: fmt.Sprintf("%d critical sections on %q all read %d and wrote %d: %d update(s) lost",
				len(g), op.Key, *op.Value, *op.Value+1, len(g)-1),
			Time: ops[g[1]].Return,
		}
		last := ops[g[0]].Return
		for _, i := range g {
			v.Ops = append(v.Ops, ref(ops[i]))
			last = max(last, ops[i].Return)
		}
		v.Faults = faultNames(faults, ops[g[0]].Call, last)
		out = append(out, v)
		if len(out) >= limit {
			break
		}
	}
	if s.Final != nil && s.Lost > 0 && len(out) == 0 {
		out = append(out, Violation{Summary: fmt.Sprintf("%d increments were acknowledged but the final value is %d",
			s.Acknowledged, *s.Final)})
	}
	return out
}
