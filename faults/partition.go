package faults

import (
	"context"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
)

func init() { Register(partition{}) }

// partition cuts links: nothing passes either way, so calls time out. The
// default target isolates one server from clients and peers alike;
// node/clients cuts it from the clients only, node/peers from its peers
// only (a primary from its replicas, say).
type partition struct{}

func (partition) Name() string { return "partition" }
func (partition) Description() string {
	return "cut links (bytes dropped both ways, calls time out) for the fault duration"
}
func (partition) Traits() Traits                       { return linkTraits(nil) }
func (partition) Applies(impls.Design, Workload) error { return nil }

func (f partition) Run(ctx context.Context, env *Env) error {
	return onLinks(ctx, env, f.Name(), func(l *cluster.Link, _ []string) error { return l.Cut(f.Name()) })
}
