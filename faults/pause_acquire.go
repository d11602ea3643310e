package faults

import (
	"context"
	"fmt"
	"slices"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/scenario"
)

func init() {
	Register(&pauseAt{name: "pause-acquire", point: lock.CheckpointGranted, designs: "redlock, redlock-noelapsed, redsync",
		desc: "SIGSTOP a client inside acquire, after the nodes granted and before it checks validity, for the fault duration",
		// Stopped right after the nodes granted: the lease is nearly whole.
		warn: warnPause("pause-acquire", true)})
}

// pauseAt freezes a client at a point inside Acquire that its design
// reports (lock.Config.Checkpoint), for Duration. The client stops itself
// there, since a signal from outside would land anywhere.
//
// pause-acquire stops it after the store granted the lock (a Redlock
// quorum said OK) and before the client judged how long the grant is
// valid: antirez's "paused during acquire" case, which Redlock's
// elapsed-time check is meant to catch.
type pauseAt struct {
	name, point, desc string
	// designs names the designs that report the point, for the refusal.
	designs string
	warn    func(scenario.Config, Target) []string
}

// Traits: the client stops itself at its checkpoint, which places the
// strike: a sweep's lock moment on top would only delay it.
func (f pauseAt) Traits() Traits {
	return Traits{Aim: history.AimWaiter, Servers: ServersUntouched,
		Size: Size{Sweeps: []Vary{VaryPause}, Moment: MomentAny}, Warn: f.warn}
}

func (f pauseAt) Name() string        { return f.name }
func (f pauseAt) Description() string { return f.desc }

func (f pauseAt) Applies(d impls.Design, _ Workload) error {
	if !slices.Contains(d.Checkpoints, f.point) {
		return fmt.Errorf("%s needs a design that reports the %s checkpoint (%s)", f.name, f.point, f.designs)
	}
	return nil
}

func (f pauseAt) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.name, func(ctx context.Context) (hit, error) {
		c, err := env.PauseAt(ctx, f.point)
		if err != nil {
			return hit{}, err
		}
		return hit{target: history.ClientName(c), heal: env.Clients.Process(c).Resume}, nil
	})
}
