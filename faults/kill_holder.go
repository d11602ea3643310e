package faults

import (
	"context"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

func init() { Register(killHolder{}) }

// killHolder crashes the client holding the lock (SIGKILL inside its
// critical section) and starts a new process for it after the fault
// duration, so the run keeps its client count. The lock stays taken until
// its lease runs out: the time until another client acquires it is the
// design's recovery time (~TTL for leases, never for a lock without
// expiry, docs/anomalies.md row 17).
type killHolder struct{}

func (killHolder) Name() string { return "kill-holder" }
func (killHolder) Description() string {
	return "SIGKILL the client holding the lock, restart it after the fault duration; measures the time to the next acquire"
}
func (killHolder) Traits() Traits {
	return Traits{Aim: history.AimHolder, Targets: HolderTarget, Target: "holder", Servers: ServersUntouched,
		Seizes: SeizeClientProcess}
}
func (killHolder) Applies(impls.Design, Workload) error { return nil }

func (f killHolder) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(ctx context.Context) (hit, error) {
		c, err := env.pickClient(ctx)
		if err != nil {
			return hit{}, err
		}
		if err := env.Clients.Crash(c); err != nil {
			return hit{}, err
		}
		return hit{target: history.ClientName(c), heal: func() error { return env.Clients.Restart(c) }}, nil
	})
}
