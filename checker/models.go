package checker

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// free is the mutex state when nobody holds the lock.
const free = -1

// lockInput is one acquire or release as the mutex model sees it.
type lockInput struct {
	Process int
	F       string
	Outcome history.Type
}

// mutexModel is an owner-aware mutex. acquire(c) is legal only when the lock
// is free and makes c the holder; release(c) only when c holds it.
//
// Leases expire without any client operation, so the model has no expiry
// step. A release the service refused (the owner check failed) is the
// service telling c that it no longer holds the lock: its lease ran out at
// some point before. We linearize that expiry at the refusal. This cannot
// hide an overlap: if another client acquired before the refusal, that
// acquire already had to linearize while c held the lock.
//
// An info op may or may not have taken effect, so the model is
// nondeterministic and porcupine tries both.
var mutexModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{free} },
	Step: func(state, input, _ any) []any {
		s, in := state.(int), input.(lockInput)
		switch in.F {
		case history.FAcquire:
			switch {
			case s != free && in.Outcome == history.OK:
				return nil
			case s != free:
				return []any{s} // an info acquire that did not happen
			case in.Outcome == history.OK:
				return []any{in.Process}
			default:
				return []any{in.Process, s}
			}
		case history.FRelease:
			switch {
			case s != in.Process && in.Outcome == history.OK:
				return nil // released a lock it did not hold
			case s != in.Process:
				return []any{s}
			case in.Outcome == history.Info:
				return []any{free, s}
			default: // ok, or refused because the lease had expired
				return []any{free}
			}
		}
		return nil
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(lockInput)
		return fmt.Sprintf("%s(c%d) %s", in.F, in.Process, in.Outcome)
	},
	DescribeState: func(state any) string {
		if state.(int) == free {
			return "free"
		}
		return fmt.Sprintf("held by c%d", state.(int))
	},
}

// counterInput is a critical section (incr: read v, write v+1) or a plain
// read of the protected resource.
type counterInput struct {
	Process int
	F       string
	Value   int64
	Outcome history.Type
	// Blind: an unknown increment whose read value was never reported.
	Blind bool
}

// counterModel checks the critical sections as atomic increments. Two
// sections that read the same value cannot both linearize: one update was
// lost. A write the resource rejected (stale fencing token), or a read it
// rejected when it fences reads too, is a fail op that wrote nothing, and
// never reaches the model. The model needs no fencing of its own: whether
// the resource checked reads or only writes changes which sections it
// refuses, not what an accepted one did. A write of unknown outcome may have happened, but
// only atomically; if it landed on a value it did not read, the final read
// exposes it.
var counterModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{int64(0)} },
	Step: func(state, input, _ any) []any {
		s, in := state.(int64), input.(counterInput)
		switch {
		case in.F == history.FRead:
			if s == in.Value {
				return []any{s}
			}
			return nil
		case in.Blind:
			return []any{s + 1, s}
		case s != in.Value && in.Outcome == history.OK:
			return nil
		case s != in.Value:
			return []any{s}
		case in.Outcome == history.OK:
			return []any{s + 1}
		default:
			return []any{s + 1, s}
		}
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(counterInput)
		if in.F == history.FRead {
			return fmt.Sprintf("read(c%d) = %d", in.Process, in.Value)
		}
		if in.Blind {
			return fmt.Sprintf("incr(c%d) ?→? %s", in.Process, in.Outcome)
		}
		return fmt.Sprintf("incr(c%d) %d→%d %s", in.Process, in.Value, in.Value+1, in.Outcome)
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}
