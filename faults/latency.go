package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

func init() { Register(latency{"latency", "requests", cluster.Requests}) }

// latency slows one direction of links: every request (or, as
// reply-latency, every reply) waits --latency ± --jitter on its way. Slow
// answers stretch acquisitions past the moment a design judges its lease
// still valid; a slow reply tells a client of a grant the server made on
// time, late.
type latency struct {
	name, what string
	stream     cluster.Stream
}

func (f latency) Name() string { return f.name }
func (f latency) Description() string {
	return "delay " + f.what + " on links by --latency ± --jitter for the fault duration"
}
func (f latency) Traits() Traits {
	t := linkTraits(f.warn)
	t.Net = NetProxy
	t.Size = Size{Setting: "latency", Sweeps: []Vary{VaryDelay}, Moment: MomentGrant}
	return t
}

func (f latency) warn(c scenario.Config, t Target) []string {
	switch {
	case c.Latency == 0:
		return []string{f.name + ": --latency 0s adds no delay: the fault changes nothing"}
	case c.Latency-c.Jitter >= c.IOTimeout && c.Impl != impls.ExecName && t.ReachesClients():
		return []string{fmt.Sprintf("%s: every round trip on a client's link is delayed at least %s (--latency less --jitter), not less than "+
			"--io-timeout %s: the client times out on each, so no slow reply ever arrives in time", f.name, time.Duration(c.Latency-c.Jitter), time.Duration(c.IOTimeout))}
	}
	return nil
}
func (latency) Applies(impls.Design, Workload) error { return nil }

func (f latency) Run(ctx context.Context, env *Env) error {
	return onLinks(ctx, env, f.Name(), func(l *cluster.Link, _ []string) error {
		return l.Latency(f.Name(), f.stream, env.Latency, env.Jitter)
	})
}
