package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/locktest/locktest/history"
)

// EffectKind grades what one fault occurrence did to the lock.
type EffectKind string

const (
	// Effective: a client lost its lease while it believed it held the
	// lock (or was granted one another client still believed it held):
	// the situation a lock must survive was created.
	Effective EffectKind = "effective"
	// Disturbed: client operations timed out or were refused during the
	// fault (a lease may have run out), but no other client was granted a
	// lock its holder still believed it held. The fault was felt, not more.
	Disturbed EffectKind = "disturbed"
	// NoEffect: nothing the lock cares about changed; the run spent the
	// fault without testing anything.
	NoEffect EffectKind = "no-effect"
)

// FaultEffect says whether one fault occurrence (one start..stop window of
// Report.Faults) took effect in the sense that matters for locks. A clean
// verdict means little when no fault took effect, and a search for a
// breaking schedule steers by which faults did: it reads these from
// Report.Efficacy (results.json: checks.efficacy).
type FaultEffect struct {
	Fault  string `json:"fault"`
	Target string `json:"target"`
	// Start and End bound the fault, on the history's clock.
	Start     int64      `json:"start"`
	End       int64      `json:"end"`
	Effective bool       `json:"effective"`
	Kind      EffectKind `json:"kind"`
	// Reason says in one phrase what happened or what was missing.
	Reason string `json:"reason"`
}

// Efficacy judges every fault occurrence of a history. ttl is the lease
// the run used: an overlap starting up to a TTL after a node fault healed
// is still its doing (a lease granted just before the heal expires later).
func Efficacy(recs []history.Record, ttl time.Duration) []FaultEffect {
	return efficacy(history.Ops(recs), history.Faults(recs), history.Start(recs), ttl)
}

// targetClient returns the client a client-aimed fault's target names
// ("c3", "c3 +2s ×1" of a skewed clock, "c3:resource" of a delayed
// write), or -1.
func targetClient(target string) int {
	c, rest, ok := history.ClientIn(target)
	if !ok || rest != "" && rest[0] != ' ' && rest[0] != ':' {
		return -1
	}
	return c
}

type judge struct {
	ops   []history.Op
	holds []hold
	start int64
	ttl   int64
}

func efficacy(ops []history.Op, faults []history.Fault, start int64, ttl time.Duration) []FaultEffect {
	j := judge{ops: ops, holds: holds(ops), start: start, ttl: int64(ttl)}
	out := make([]FaultEffect, 0, len(faults))
	for _, f := range faults {
		kind, reason := j.fault(f)
		out = append(out, FaultEffect{Fault: f.Name, Target: f.Target, Start: f.Start, End: f.Stop,
			Effective: kind == Effective, Kind: kind, Reason: reason})
	}
	return out
}

// fault judges f by its aim, which the history records (history.Aim): a
// fault on one client by what happened to that client, every other (and
// any in a history from before aims were recorded) by what happened to
// the lock as a whole.
func (j judge) fault(f history.Fault) (EffectKind, string) {
	client := -1
	if f.Aim.OnClient() {
		client = targetClient(f.Target)
	}
	switch {
	case client >= 0 && f.Aim == history.AimHolder:
		return j.holder(f, client)
	case client >= 0 && f.Aim == history.AimWaiter:
		return j.waiter(f, client)
	case client >= 0 && f.Aim == history.AimWrite:
		return j.slowWrite(f, client)
	}
	return j.node(f)
}

// at formats a history time for a reason.
func (j judge) at(t int64) string { return fmt.Sprintf("%.3fs", float64(t-j.start)/1e9) }

// grantIn returns the first hold on key by a client other than c that
// began in [from, to).
func (j judge) grantIn(key string, c int, from, to int64) (hold, bool) {
	for _, h := range j.holds { // in start order
		if h.from >= to {
			break
		}
		if h.from >= from && h.acquire.Key == key && h.acquire.Process != c {
			return h, true
		}
	}
	return hold{}, false
}

// nextCompletion is when c's first operation to complete after t did
// (Never if none did): until then c had no chance to notice a lost lease.
func (j judge) nextCompletion(c int, t int64) int64 {
	next := int64(history.Never)
	for _, op := range j.ops {
		if op.Process == c && op.Completed > t {
			next = min(next, op.Completed)
		}
	}
	return next
}

// crashedBy reports whether h ended with a crash of its client that is
// the kill of fault f: the client did nothing between the crash and f.
func (j judge) crashedBy(h hold, f history.Fault) bool {
	if h.release == nil || h.release.F != history.FCrash || h.to > f.Start {
		return false
	}
	for _, op := range j.ops {
		if op.Process == h.acquire.Process && op.F != history.FCrash && op.Call > h.to && op.Call <= f.Start {
			return false
		}
	}
	return true
}

// staleGrant finds an acquire of c in flight during f that returned ok
// while another client still believed it held the key.
func (j judge) staleGrant(f history.Fault, c int) (string, bool) {
	for _, b := range j.holds {
		if b.acquire.Process != c || b.acquire.Call >= f.Stop || b.from <= f.Start {
			continue
		}
		for _, a := range j.holds {
			if a.acquire.Key == b.acquire.Key && a.acquire.Process != c && a.from < b.from && b.from < a.to {
				return fmt.Sprintf("c%d's acquire, in flight during the fault, returned ok at %s while c%d still believed it held %q",
					c, j.at(b.from), a.acquire.Process, b.acquire.Key), true
			}
		}
	}
	return "", false
}

// inFlight reports whether op was running at some point of f.
func inFlight(op history.Op, f history.Fault) bool {
	return op.Call <= f.Stop && op.Completed >= f.Start
}

// holder judges a fault on a client (a pause, a kill, a skewed clock):
// effective when the client held the lock during the fault and another
// client was granted it while the first still believed it held it, before
// the first could notice (its next operation completing); disturbed when
// its lease ran out with no one there to take it. A killed client believes
// nothing, but its lease lives on until it runs out.
func (j judge) holder(f history.Fault, c int) (EffectKind, string) {
	deadline := max(f.Stop, j.nextCompletion(c, f.Start))
	var held *hold
	for _, h := range j.holds {
		if h.acquire.Process != c {
			continue
		}
		crashed := j.crashedBy(h, f)
		if !crashed && (h.from >= f.Stop || h.to <= f.Start) {
			continue
		}
		end := h.to
		if crashed {
			end = history.Never
		}
		if g, ok := j.grantIn(h.acquire.Key, c, max(f.Start, h.from), min(end, deadline)); ok {
			if crashed {
				return Effective, fmt.Sprintf("c%d was killed holding %q and c%d was granted it at %s, before c%d came back",
					c, h.acquire.Key, g.acquire.Process, j.at(g.from), c)
			}
			return Effective, fmt.Sprintf("c%d was granted %q at %s while c%d still believed it held it (since %s)",
				g.acquire.Process, h.acquire.Key, j.at(g.from), c, j.at(h.from))
		}
		if held == nil {
			held = &h
		}
	}
	if why, ok := j.staleGrant(f, c); ok {
		return Effective, why
	}
	switch {
	case held != nil && j.crashedBy(*held, f):
		return NoEffect, fmt.Sprintf("c%d was killed holding %q, and no other client was granted it before c%d came back",
			c, held.acquire.Key, c)
	case held != nil && held.release != nil && held.release.F == history.FRelease && held.release.Outcome == history.Fail:
		return Disturbed, fmt.Sprintf("c%d's lease on %q ran out (its release was refused), but no other client was granted it meanwhile",
			c, held.acquire.Key)
	case held != nil:
		return NoEffect, fmt.Sprintf("c%d held %q through the fault, and no other client was granted it before c%d went on",
			c, held.acquire.Key, c)
	}
	for _, op := range j.ops {
		if op.Process == c && op.F == history.FAcquire && inFlight(op, f) {
			return NoEffect, fmt.Sprintf("c%d was not holding the lock (it was waiting in acquire)", c)
		}
	}
	return NoEffect, fmt.Sprintf("c%d was not holding the lock", c)
}

// waiter judges a fault on a client inside acquire (pause-waiter,
// pause-acquire): effective when another client was granted the key while
// the paused acquire was in flight.
func (j judge) waiter(f history.Fault, c int) (EffectKind, string) {
	if why, ok := j.staleGrant(f, c); ok {
		return Effective, why
	}
	var waited *history.Op
	for _, op := range j.ops {
		if op.Process != c || op.F != history.FAcquire || !inFlight(op, f) {
			continue
		}
		if waited == nil {
			waited = &op
		}
		if g, ok := j.grantIn(op.Key, c, max(f.Start, op.Call), min(f.Stop, op.Completed)+1); ok {
			return Effective, fmt.Sprintf("c%d was granted %q at %s while c%d's acquire was paused; that acquire then %s",
				g.acquire.Process, op.Key, j.at(g.from), c, ended(op))
		}
	}
	if waited == nil {
		return NoEffect, fmt.Sprintf("c%d had no acquire in flight", c)
	}
	return NoEffect, fmt.Sprintf("no other client was granted %q while c%d's acquire was paused", waited.Key, c)
}

// ended says how an operation completed, for reasons.
func ended(op history.Op) string {
	switch {
	case op.Outcome == history.OK:
		return "returned ok"
	case op.Outcome == history.Fail:
		return "failed"
	case op.Completed == history.Never:
		return "never completed"
	default:
		return "timed out (unknown outcome)"
	}
}

// slowWrite judges slow-resource-write: effective when the holder's
// delayed write completed after another client was granted the key. A
// write the client gave up on (info) may still have landed later: when
// another grant followed before the delay ended, that is a disturbance.
func (j judge) slowWrite(f history.Fault, c int) (EffectKind, string) {
	var gaveUp, sent *history.Op
	for _, op := range j.ops {
		if op.Process != c || op.F != history.FIncr || !inFlight(op, f) {
			continue
		}
		done := op.Completed
		if done == history.Never {
			done = f.Stop
		}
		if g, ok := j.grantIn(op.Key, c, max(f.Start, op.Call), done); ok {
			what := "completed"
			switch {
			case op.Outcome == history.Fail && op.Error == history.RejectedError:
				what = "was rejected (stale token)"
			case op.Outcome != history.OK:
				what = "ended unknown (" + ended(op) + ")"
			}
			return Effective, fmt.Sprintf("c%d's delayed write %s at %s, after c%d was granted %q at %s",
				c, what, j.at(done), g.acquire.Process, op.Key, j.at(g.from))
		}
		if op.Outcome == history.Info && gaveUp == nil {
			gaveUp = &op
		}
		if sent == nil {
			sent = &op
		}
	}
	switch {
	case gaveUp != nil:
		if g, ok := j.grantIn(gaveUp.Key, c, gaveUp.Completed, f.Stop); ok {
			return Disturbed, fmt.Sprintf("c%d gave up its delayed write at %s and c%d was granted %q at %s; the write may have landed after",
				c, j.at(gaveUp.Completed), g.acquire.Process, gaveUp.Key, j.at(g.from))
		}
		return NoEffect, fmt.Sprintf("c%d gave up its delayed write at %s (io-timeout) and no other client was granted %q before the delay ended",
			c, j.at(gaveUp.Completed), gaveUp.Key)
	case sent != nil:
		return NoEffect, fmt.Sprintf("c%d's delayed write completed at %s, before any other client was granted %q",
			c, j.at(sent.Completed), sent.Key)
	}
	return NoEffect, fmt.Sprintf("c%d wrote nothing to the resource during the fault", c)
}

// node judges a fault on servers, links or their clocks: effective when
// two clients' believed holds of one key overlap during the fault or
// start within a TTL after it; disturbed when, short of that, client
// operations in flight during it timed out or were refused (a refused
// release is a lease that ran out, with no one there to take it). Refused
// acquires are not counted: a busy lock refuses them too.
func (j judge) node(f history.Fault) (EffectKind, string) {
	for i, a := range j.holds {
		for _, b := range j.holds[i+1:] {
			if b.from >= a.to || b.from > f.Stop+j.ttl {
				break
			}
			if b.acquire.Key != a.acquire.Key || b.acquire.Process == a.acquire.Process || min(a.to, b.to) <= f.Start {
				continue
			}
			return Effective, fmt.Sprintf("c%d was granted %q at %s while c%d still believed it held it (since %s)",
				b.acquire.Process, b.acquire.Key, j.at(b.from), a.acquire.Process, j.at(a.from))
		}
	}
	const none = "no client was granted a lock another still believed it held"
	var unknown, refusedReleases, refused int
	for _, op := range j.ops {
		if op.Process < 0 || !inFlight(op, f) || op.F == history.FCrash {
			continue
		}
		switch {
		case op.Outcome == history.Info:
			unknown++
		case op.Outcome == history.Fail && op.F == history.FRelease:
			refusedReleases++
		case op.Outcome == history.Fail && op.F != history.FAcquire:
			refused++
		}
	}
	var felt []string
	for _, c := range []struct {
		n    int
		what string
	}{
		{unknown, "client op(s) in flight ended unknown (timed out or lost their connection)"},
		{refusedReleases, "release(s) were refused (a lease ran out under its holder)"},
		{refused, "other client op(s) were refused"},
	} {
		if c.n > 0 {
			felt = append(felt, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(felt) > 0 {
		return Disturbed, none + ", but " + strings.Join(felt, "; ")
	}
	return NoEffect, none
}
