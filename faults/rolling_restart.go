package faults

import (
	"context"
	"errors"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

func init() { Register(rollingRestart{}) }

// rollingRestart restarts servers one at a time, as an upgrade or a
// config change does: each is SIGKILLed, started again after the fault
// duration (empty unless --persist), and the next goes one TTL after the
// previous came back, time enough for a holder to renew in between. No
// single restart loses a quorum's lock, so a design is only hurt if
// restarts add up: redsync's Extend, which renews only on the nodes that
// still hold the key, lets each restart take one more node for good
// (docs/anomalies.md row 28). A duration past the lease is the delayed
// restart Redlock's author prescribes; a short one is a quick restart.
type rollingRestart struct{}

func (rollingRestart) Name() string { return "rolling-restart" }
func (rollingRestart) Description() string {
	return "SIGKILL servers one at a time, each restarted after the fault duration (with its data only under --persist), " +
		"the next one TTL later"
}
func (rollingRestart) Traits() Traits {
	return Traits{Aim: history.AimServers, Targets: NodeTargets, Target: "all", Seizes: SeizeServerProcess}
}
func (rollingRestart) Applies(impls.Design, Workload) error { return nil }

func (f rollingRestart) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(context.Context) (hit, error) {
		nodes := env.pickNodes()
		var down *cluster.Node // killed and not yet restarted
		var errs []error
		hold := func(ctx context.Context) {
			for i, n := range nodes {
				if i > 0 && !sleep(ctx, env.TTL) {
					return
				}
				if err := n.Kill(); err != nil {
					errs = append(errs, err)
					return
				}
				down = n
				env.Log.Info("restarting", "fault", f.Name(), "node", n.Name)
				// The restart comes after the full duration even when the run
				// is ending: a shorter one would be a quick restart not asked
				// for.
				sleep(context.WithoutCancel(ctx), env.Duration)
				if err := restart(n); err != nil {
					errs = append(errs, err)
					return
				}
				down = nil
			}
		}
		heal := func() error {
			if down != nil {
				errs = append(errs, restart(down))
			}
			return errors.Join(errs...)
		}
		return hit{target: nodeNames(nodes), hold: hold, heal: heal}, nil
	})
}
