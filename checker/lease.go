package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/locktest/locktest/history"
)

// LeaseClass says what a violation means for the lock under test: a bug
// of its own, or the lease contract that every unfenced lease lock has.
// A search reports the worst class it found, so that a user learns about
// their lock, not about leases in general.
type LeaseClass string

const (
	// NoFaultNeeded: the same run without any fault loses updates too,
	// while every critical section was shorter than the lease. Only a
	// search, which makes that fault-free rerun, can say it.
	NoFaultNeeded LeaseClass = "no-fault-needed"
	// InsideLease: a lease still valid was granted again, a client
	// believed a grant its lease may not have covered, or the data was
	// lost while no lease had run out. A bug of the lock: no fault excuses
	// it, whatever made it show.
	InsideLease LeaseClass = "inside-lease"
	// BeyondLease: every overlap began after the earlier holder's lease
	// had run out: a pause, a delay or a clock jump outlasted the lease,
	// which every unfenced lease lock allows. Fencing is the cure.
	BeyondLease LeaseClass = "beyond-lease"
)

// Worse reports whether c is a worse finding than d: no fault needed,
// then inside the lease, then beyond it, then none ("").
func (c LeaseClass) Worse(d LeaseClass) bool { return c.rank() < d.rank() }

func (c LeaseClass) rank() int {
	switch c {
	case NoFaultNeeded:
		return 0
	case InsideLease:
		return 1
	case BeyondLease:
		return 2
	}
	return 3
}

// LeaseFinding is a history's violations judged against the lease.
type LeaseFinding struct {
	Class LeaseClass `json:"class"`
	// Why names the violation that decided the class, with its times.
	Why string `json:"why"`
}

// ClassifyLease judges a history's violations against a lease of ttl. A
// client's lease began no earlier than its acquire's call (or the call of
// a renewal that returned ok), so it ran until at least call + ttl: a
// second client granted the key before then had a still-valid lease
// granted again. "Inside" is said only when that is sure; an overlap that
// began after the earlier lease may have run out is "beyond". Nil when
// there is no violation to judge, or no ttl.
//
// The lease is the run's TTL, on the shared monotonic clock: a lock that
// reports a shorter validity and honours it never overlaps inside it, and
// one that ignores it is wrong inside the TTL too. What the history does
// not hold cannot be judged: the server's grant lies somewhere in its
// acquire, so an acquire that took a lease or more (a waiter polling, a
// paused one) may have been granted a lease that ran out before it
// returned, and an overlap with it reads as beyond.
func ClassifyLease(ops []history.Op, faults []history.Fault, ttl time.Duration, start int64) *LeaseFinding {
	if ttl <= 0 {
		return nil
	}
	l := leaseJudge{ops: ops, ttl: int64(ttl), start: start, renews: map[renewKey][]history.Op{}}
	for _, f := range faults {
		if f.Aim == history.AimClocks {
			l.clocks = append(l.clocks, f)
		}
		if _, _, ok := history.ClientIn(f.Target); ok {
			l.struck = append(l.struck, f)
		}
	}
	for _, op := range ops {
		if op.F == history.FRenew && op.Outcome == history.OK {
			k := renewKey{op.Process, op.Key}
			l.renews[k] = append(l.renews[k], op)
		}
	}
	var beyond *LeaseFinding
	hs := holds(ops)
	for i, a := range hs {
		for _, b := range hs[i+1:] {
			if b.from >= a.to {
				break
			}
			if b.acquire.Key != a.acquire.Key || b.acquire.Process == a.acquire.Process {
				continue
			}
			if why, inside := l.overlap(a, b); inside {
				return &LeaseFinding{InsideLease, why}
			} else if beyond == nil {
				beyond = &LeaseFinding{BeyondLease, why}
			}
		}
	}
	for _, g := range readTwice(ops) {
		if why, inside := l.lost(hs, g); inside {
			return &LeaseFinding{InsideLease, why}
		} else if beyond == nil {
			beyond = &LeaseFinding{BeyondLease, why}
		}
	}
	return beyond
}

type leaseJudge struct {
	ops   []history.Op
	ttl   int64
	start int64
	// renews are the renewals that returned ok, per client and key.
	renews map[renewKey][]history.Op
	// clocks are the strikes that moved servers' clocks; struck those
	// aimed at a client.
	clocks, struck []history.Fault
}

// clockMoved names a strike that moved a server's clock between from and
// to, if one did: a lease is measured on the server's clock, and a clock
// that jumps ends it early. That breaks the timing every lease lock
// assumes, not the lock's own logic, so what happens under it is beyond
// the lease.
func (l leaseJudge) clockMoved(from, to int64) (string, bool) {
	for _, f := range l.clocks {
		if f.Start <= to && f.Stop >= from {
			return fmt.Sprintf("; %s moved %s's clock from %s", f.Name, f.Target, l.at(f.Start)), true
		}
	}
	return "", false
}

type renewKey struct {
	process int
	key     string
}

func (l leaseJudge) at(t int64) string { return Seconds(t, l.start) }

// leaseStart is the latest moment h's lease is known to have begun by t:
// its acquire's call, or the call of a renewal that returned ok by then.
func (l leaseJudge) leaseStart(h hold, t int64) int64 {
	s := h.acquire.Call
	for _, op := range l.renews[renewKey{h.acquire.Process, h.acquire.Key}] {
		if op.Call >= h.from && op.Return <= t {
			s = max(s, op.Call)
		}
	}
	return s
}

// overlap judges b granted while a still believed it held the same key.
// The server's grant lies somewhere in an acquire, so b, whose acquire
// returned later, may still have been granted first: if a fault struck
// b's client during its acquire (a pause, a delayed reply) and b's lease,
// begun no earlier than its call, may have run out before a's grant
// returned, b is the stale holder and the overlap may be beyond the lease,
// whichever of them returned first. Without such a strike a long acquire
// is a waiter's, granted when it returned. And a strike that stopped b at
// one of its own checkpoints excuses nothing when b still claimed a lease
// (a positive validity): b's own logic ran after the pause, and a lock
// that measures its lease from when it asked gives such a grant back.
func (l leaseJudge) overlap(a, b hold) (string, bool) {
	var claimed string
	if end := l.leaseStart(b, a.from) + l.ttl; end <= a.from {
		switch f, struck := l.stalled(b); {
		case struck && f.Point != "" && b.acquire.Validity > 0:
			claimed = fmt.Sprintf("; c%d, stopped at its %q checkpoint from %s to %s, still claimed a lease valid for %s after its acquire began at %s",
				b.acquire.Process, f.Point, l.at(f.Start), l.at(f.Stop), time.Duration(b.acquire.Validity).Round(time.Millisecond), l.at(b.acquire.Call))
		case struck:
			return fmt.Sprintf("c%d's acquire of %q began at %s and returned at %s, after c%d's grant (at %s): its own lease may have run out (it ran until at least %s) before it knew of it",
				b.acquire.Process, b.acquire.Key, l.at(b.acquire.Call), l.at(b.from), a.acquire.Process, l.at(a.from), l.at(end)), false
		}
	}
	if end := l.leaseStart(a, b.from) + l.ttl; b.from < end {
		why := fmt.Sprintf("c%d was granted %q at %s while c%d's lease on it ran until at least %s",
			b.acquire.Process, b.acquire.Key, l.at(b.from), a.acquire.Process, l.at(end)) + claimed
		if clock, moved := l.clockMoved(a.from, b.from); moved {
			return why + " by the true clock" + clock, false
		}
		return why, true
	}
	return fmt.Sprintf("c%d was granted %q at %s, when c%d's lease may have run out (it ran until at least %s) while c%d still believed it held it",
		b.acquire.Process, b.acquire.Key, l.at(b.from), a.acquire.Process,
		l.at(l.leaseStart(a, b.from)+l.ttl), a.acquire.Process), false
}

// lost judges a group of critical sections that read the same value:
// the data was lost inside the lease when every one of them, and every
// other write to the key while they ran, ended while its holder's lease
// surely still ran. The others count because a stale write rolls the
// value back: after a holder paused past its lease writes, the rightful
// holders that follow read a value already read, inside their own leases,
// and what lost it was the write beyond the lease.
func (l leaseJudge) lost(hs []hold, group []int) (string, bool) {
	op := l.ops[group[0]]
	first, last := op.Call, op.Return
	for _, i := range group {
		first, last = min(first, l.ops[i].Call), max(last, l.ops[i].Return)
	}
	for i, w := range l.ops {
		member := slices.Contains(group, i)
		if !member && (w.F != history.FIncr || w.Key != op.Key || w.Outcome == history.Fail ||
			w.Call > last || writeEnd(w) < first) {
			continue
		}
		h, ok := holdOf(hs, w)
		if !ok {
			return fmt.Sprintf("c%d wrote %q at %s holding no lock it knew of", w.Process, w.Key, l.at(w.Return)), true
		}
		end := l.leaseStart(h, writeEnd(w)) + l.ttl
		switch {
		case writeEnd(w) == history.Never:
			return fmt.Sprintf("c%d's write to %q, called at %s, never completed: it may have landed after its lease ran out (at %s)",
				w.Process, w.Key, l.at(w.Call), l.at(end)), false
		case writeEnd(w) >= end:
			return fmt.Sprintf("c%d's critical section on %q ended at %s, after its lease had run out (at %s)",
				w.Process, w.Key, l.at(writeEnd(w)), l.at(end)), false
		}
	}
	why := fmt.Sprintf("%d critical sections on %q read %d, each ending while its holder's lease still ran",
		len(group), op.Key, *op.Value)
	if clock, moved := l.clockMoved(op.Call, last); moved {
		return why + " by the true clock" + clock, false
	}
	return why, true
}

// writeEnd is the latest moment op's write may have landed: its return,
// or for an op whose outcome is unknown, when it completed (the end of the
// history if it never did).
func writeEnd(op history.Op) int64 {
	if op.Return != history.Never {
		return op.Return
	}
	return op.Completed
}

// stalled returns a fault aimed at h's client that struck while its
// acquire was in flight, if one did.
func (l leaseJudge) stalled(h hold) (history.Fault, bool) {
	for _, f := range l.struck {
		if c, _, ok := history.ClientIn(f.Target); ok && c == h.acquire.Process && f.Start <= h.from && f.Stop >= h.acquire.Call {
			return f, true
		}
	}
	return history.Fault{}, false
}

// holdOf finds the hold in which op ran: same client and key, begun by
// op's call.
func holdOf(hs []hold, op history.Op) (hold, bool) {
	for _, h := range hs {
		if h.acquire.Process == op.Process && h.acquire.Key == op.Key && h.from <= op.Call && op.Call <= h.to {
			return h, true
		}
	}
	return hold{}, false
}
