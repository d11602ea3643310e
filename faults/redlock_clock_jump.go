package faults

import (
	"context"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

func init() { Register(redlockClockJump{}) }

// redlockClockJump is docs/anomalies.md row 8: a client holds the Redlock on three
// of five nodes (it cannot reach the other two), and the clock of one of
// the three jumps forward past the lease: its key expires at once, and a
// client that reaches every node gets three nodes of its own.
type redlockClockJump struct{}

func (redlockClockJump) Name() string { return "redlock-clock-jump" }
func (redlockClockJump) Description() string {
	return "cut the holder from 2 of 5 nodes; once it holds the other 3, jump one of them --clock-delta ahead for the fault duration"
}
func (f redlockClockJump) Applies(d impls.Design, _ Workload) error {
	if err := splitApplies(d, f.Name()); err != nil {
		return err
	}
	return serverClock{f.Name()}.Applies(d, Workload{})
}

// Traits: the split waits for the holder to hold its three reachable
// nodes before it jumps one clock, so it places its strike itself.
func (f redlockClockJump) Traits() Traits {
	return Traits{Aim: history.AimClocks, ServerClocks: true, Links: true, OwnSchedule: true,
		Size: Size{Setting: "clock-delta", Sweeps: []Vary{VaryClock}, Moment: MomentAny},
		Warn: warnClockJump(f.Name())}
}

func (f redlockClockJump) Run(ctx context.Context, env *Env) error {
	return runSplit(ctx, env, f.Name(), "clock "+signed(env.ClockDelta), jumpClock(env.ClockDelta))
}
