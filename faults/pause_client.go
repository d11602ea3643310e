package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

func init() {
	Register(&pauseClient{"pause-client", "SIGSTOP a client process for the fault duration, then SIGCONT (a stop-the-world pause)",
		Traits{Aim: history.AimHolder, Targets: ClientTargets | HolderTarget, Target: "client",
			Servers: ServersUntouched, Seizes: SeizeClientProcess,
			// It hits a random client by default, usually a waiter: a
			// sweep aims it at the grant's holder so every strike can matter.
			Size: Size{Sweeps: []Vary{VaryPause, VaryLockDelay}, Moment: MomentGrant, Target: "holder"},
			Warn: warnPause("pause-client", false)}})
}

// pauseClient freezes a client process with SIGSTOP, as a stop-the-world GC
// pause does. Aimed at the holder (pause-holder) it stops the client inside
// its critical section, after it read the resource and before it writes.
type pauseClient struct {
	name, desc string
	traits     Traits
}

func (f pauseClient) Name() string                       { return f.name }
func (f pauseClient) Description() string                { return f.desc }
func (f pauseClient) Traits() Traits                     { return f.traits }
func (pauseClient) Applies(impls.Design, Workload) error { return nil }

func (f pauseClient) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.name, func(ctx context.Context) (hit, error) {
		c, err := env.pickClient(ctx)
		if err != nil {
			return hit{}, err
		}
		p := env.Clients.Process(c)
		if err := p.Pause(); err != nil {
			return hit{}, err
		}
		return hit{target: history.ClientName(c), heal: p.Resume}, nil
	})
}

// warnPause warns when a pause cannot outlast the lease it stops. A
// client paused at its grant (fresh) still has nearly its whole lease;
// any other client's lease was granted or kept alive within the last
// TTL/2 (designs that keep leases alive renew them at least that often).
func warnPause(name string, fresh bool) func(scenario.Config, Target) []string {
	return func(c scenario.Config, _ Target) []string {
		pause, hold, ttl := time.Duration(c.FaultDuration), time.Duration(c.HoldMax), time.Duration(c.TTL)
		switch {
		case fresh && pause+hold < ttl:
			return []string{fmt.Sprintf("%s: pauses of %s plus --hold-max %s are shorter than --ttl %s: a client paused just after its grant "+
				"still has its lease when it resumes; use a --fault-duration above --ttl", name, pause, hold, ttl)}
		case !fresh && pause+hold < ttl/2:
			return []string{fmt.Sprintf("%s: pauses of %s plus --hold-max %s are under half of --ttl %s: any paused client's lease "+
				"(granted or kept alive within the last TTL/2) outlasts the pause; use a --fault-duration above --ttl", name, pause, hold, ttl)}
		}
		return nil
	}
}
