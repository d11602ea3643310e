package faults

import (
	"context"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

func init() { Register(redlockRestart{}) }

// redlockRestart is docs/anomalies.md row 9: a client holds the Redlock on three
// of five nodes (it cannot reach the other two), and one of the three
// crashes and restarts after the fault duration. Without persistence it
// comes back empty and a client that reaches every node gets three nodes
// of its own; with --persist (AOF, fsync always), or a restart delayed
// past the lease, the holder's key or lease outlives the crash.
type redlockRestart struct{}

func (redlockRestart) Name() string { return "redlock-restart" }
func (redlockRestart) Description() string {
	return "cut the holder from 2 of 5 nodes; once it holds the other 3, SIGKILL one of them and restart it after the fault duration"
}

// Traits: the split cuts links and waits for the holder's grant, then
// kills one of its nodes.
func (redlockRestart) Traits() Traits {
	return Traits{Aim: history.AimServers, Links: true, OwnSchedule: true}
}

func (f redlockRestart) Applies(d impls.Design, _ Workload) error { return splitApplies(d, f.Name()) }

func (f redlockRestart) Run(ctx context.Context, env *Env) error {
	return runSplit(ctx, env, f.Name(), "killed", killRestart)
}
