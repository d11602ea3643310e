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

// pauseAt freezes a client at a point inside Acquire (or, for an exec
// program, Release) that its design reports (lock.Config.Checkpoint), for
// Duration. The client stops itself there, since a signal from outside
// would land anywhere.
//
// pause-acquire stops it after the store granted the lock (a Redlock
// quorum said OK) and before the client judged how long the grant is
// valid: antirez's "paused during acquire" case, which Redlock's
// elapsed-time check is meant to catch.
type pauseAt struct {
	name, desc string
	// point is the checkpoint; "" is the run's (Env.Checkpoint), any the
	// design lists.
	point string
	// designs names the designs that report the point, for the refusal.
	designs string
	warn    func(scenario.Config, Target) []string
}

// Traits: the client stops itself at its checkpoint, which places the
// strike: a sweep's lock moment on top would only delay it.
func (f pauseAt) Traits() Traits {
	return Traits{Aim: history.AimWaiter, Servers: ServersUntouched, AtCheckpoint: f.point == "",
		Size: Size{Sweeps: []Vary{VaryPause}, Moment: MomentAny}, Seizes: SeizeClientProcess, Warn: f.warn}
}

func (f pauseAt) Name() string        { return f.name }
func (f pauseAt) Description() string { return f.desc }

func (f pauseAt) Applies(d impls.Design, _ Workload) error {
	switch {
	case f.point == "" && len(d.Checkpoints) == 0:
		return fmt.Errorf("%s needs a design that reports checkpoints (%s)", f.name, f.designs)
	case f.point != "" && !slices.Contains(d.Checkpoints, f.point):
		return fmt.Errorf("%s needs a design that reports the %s checkpoint (%s)", f.name, f.point, f.designs)
	}
	return nil
}

func (f pauseAt) Run(ctx context.Context, env *Env) error {
	point := f.point
	if point == "" {
		point = env.Checkpoint
	}
	if point == "" {
		return fmt.Errorf("%s: the run names no checkpoint", f.name)
	}
	return every(ctx, env, f.name, func(ctx context.Context) (hit, error) {
		c, err := env.PauseAt(ctx, point)
		if err != nil {
			return hit{}, err
		}
		return hit{target: history.ClientName(c), point: point, heal: env.Clients.Process(c).Resume}, nil
	})
}
