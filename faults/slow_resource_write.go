package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

func init() { Register(slowResourceWrite{}) }

// slowResourceWrite is Kleppmann's delayed packet (docs/anomalies.md row 3): the
// holder has read the resource and sends its write, which the network
// holds for the fault duration (> TTL). Meanwhile the lease runs out,
// another client takes the lock and writes; then the old write lands. Only
// a resource that checks fencing tokens refuses it.
//
// As in Kleppmann's example the holder must wait for its write: with an
// --io-timeout shorter than the delay it gives up, releases, and usually
// wins the lock straight back, so no one writes in between.
//
// The delay stays on for the fault duration plus one TTL, so that a write
// sent up to a TTL after the fault began still arrives late rather than
// being released early when the delay is removed.
type slowResourceWrite struct{}

func (slowResourceWrite) Name() string { return "slow-resource-write" }
func (slowResourceWrite) Description() string {
	return "delay the lock holder's writes to the resource by the fault duration (> TTL): a delayed packet"
}

// Traits: it delays the holder's link to the resource, which is no lock
// server's; the delay is its length.
func (slowResourceWrite) Traits() Traits {
	return Traits{Aim: history.AimWrite, Targets: HolderTarget, Target: "holder", Servers: ServersUntouched,
		Links: true, Net: NetProxy, Size: Size{Sweeps: []Vary{VaryDelay}, Moment: MomentGrant},
		Warn: func(c scenario.Config, _ Target) []string {
			// The resource client waits --io-timeout for a reply.
			delay, hold, ttl, io := time.Duration(c.FaultDuration), time.Duration(c.HoldMax), time.Duration(c.TTL), time.Duration(c.IOTimeout)
			var out []string
			if delay > io {
				out = append(out, fmt.Sprintf("slow-resource-write: writes are delayed by --fault-duration %s, longer than --io-timeout %s: the holder gives up "+
					"on its write and releases instead of waiting past its lease; set --io-timeout above %s", delay, io, delay))
			}
			if delay+hold < ttl {
				out = append(out, fmt.Sprintf("slow-resource-write: a write delayed by %s, sent within --hold-max %s of its grant, lands before the --ttl %s lease "+
					"runs out, so no other client can be granted first; use a --fault-duration above --ttl", delay, hold, ttl))
			}
			return out
		}}
}

func (slowResourceWrite) Applies(d impls.Design, w Workload) error {
	if d.GuardsWrites {
		return fmt.Errorf("%s keeps the protected data in its own servers: there is no resource link to delay", d.Name)
	}
	if !w.Resource {
		return fmt.Errorf("workload %s has no resource to write to (use counter)", w.Name)
	}
	return nil
}

func (f slowResourceWrite) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(ctx context.Context) (hit, error) {
		c, err := env.pickClient(ctx)
		if err != nil {
			return hit{}, err
		}
		name := cluster.LinkName(history.ClientName(c), cluster.RoleResource)
		for _, l := range env.Links {
			if l.Name != name {
				continue
			}
			if err := l.Latency(f.Name(), cluster.Requests, env.Duration, 0); err != nil {
				return hit{}, err
			}
			return hit{target: name,
				hold: func(ctx context.Context) { sleep(ctx, env.Duration+env.TTL) },
				heal: func() error { return l.Heal(f.Name()) }}, nil
		}
		return hit{}, errors.New("no link " + name)
	})
}
