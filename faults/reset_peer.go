package faults

import (
	"context"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
)

func init() { Register(resetPeer{}) }

// resetPeer resets connections on links as soon as data flows: requests in
// flight are lost with their replies, so outcomes become unknown.
type resetPeer struct{}

func (resetPeer) Name() string { return "reset-peer" }
func (resetPeer) Description() string {
	return "reset connections on links whenever data flows, for the fault duration"
}
func (resetPeer) Traits() Traits                       { return linkTraits(nil) }
func (resetPeer) Applies(impls.Design, Workload) error { return nil }

func (f resetPeer) Run(ctx context.Context, env *Env) error {
	return onLinks(ctx, env, f.Name(), func(l *cluster.Link, _ []string) error { return l.Reset(f.Name()) })
}
