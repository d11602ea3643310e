package faults

import (
	"context"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
)

func init() { Register(latency{}) }

// latency slows links: every request waits --latency ± --jitter before it
// reaches the server. Slow answers stretch acquisitions past the moment a
// design judges its lease still valid.
type latency struct{}

func (latency) Name() string { return "latency" }
func (latency) ServerFree()  {}
func (latency) Size() string { return "latency" }
func (latency) Description() string {
	return "delay requests on links by --latency ± --jitter for the fault duration"
}
func (latency) Targets() (Targets, string)         { return LinkTargets, "node" }
func (latency) Applies(impls.Design, string) error { return nil }

func (f latency) Run(ctx context.Context, env *Env) error {
	return onLinks(ctx, env, f.Name(), func(l *cluster.Link) error {
		return l.Latency(f.Name(), env.Latency, env.Jitter)
	})
}
