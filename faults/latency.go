package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

func init() { Register(latency{}) }

// latency slows links: every request waits --latency ± --jitter before it
// reaches the server. Slow answers stretch acquisitions past the moment a
// design judges its lease still valid.
type latency struct{}

func (latency) Name() string { return "latency" }
func (latency) Description() string {
	return "delay requests on links by --latency ± --jitter for the fault duration"
}
func (latency) Traits() Traits {
	t := linkTraits(warnLatency)
	t.Size = Size{Setting: "latency", Sweeps: []Vary{VaryDelay}, Moment: MomentGrant}
	return t
}

func warnLatency(c scenario.Config, t Target) []string {
	switch {
	case c.Latency == 0:
		return []string{"latency: --latency 0s adds no delay: the fault changes nothing"}
	case c.Latency-c.Jitter >= c.IOTimeout && c.Impl != impls.ExecName && t.ReachesClients():
		return []string{fmt.Sprintf("latency: every request on a client's link is delayed at least %s (--latency less --jitter), not less than "+
			"--io-timeout %s: the client times out on each, so no slow reply ever arrives in time", time.Duration(c.Latency-c.Jitter), time.Duration(c.IOTimeout))}
	}
	return nil
}
func (latency) Applies(impls.Design, bool) error { return nil }

func (f latency) Run(ctx context.Context, env *Env) error {
	return onLinks(ctx, env, f.Name(), func(l *cluster.Link) error {
		return l.Latency(f.Name(), env.Latency, env.Jitter)
	})
}
