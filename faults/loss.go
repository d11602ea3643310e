package faults

import (
	"context"
	"fmt"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

func init() { Register(loss{}) }

// loss drops each packet on links, both ways, with probability --loss:
// TCP retransmits, so calls slow down unevenly and some time out, the
// network a lock meets on a bad day rather than a clean cut.
type loss struct{}

func (loss) Name() string { return "loss" }
func (loss) Description() string {
	return "drop each packet on links with probability --loss, for the fault duration (--network netns)"
}
func (f loss) Traits() Traits {
	t := linkTraits(f.warn)
	t.Net = NetKernel
	return t
}

func (f loss) warn(c scenario.Config, _ Target) []string {
	if c.Loss <= 0 || c.Loss > 1 {
		return []string{fmt.Sprintf("%s: --loss %v drops nothing or is no probability: the fault changes nothing", f.Name(), c.Loss)}
	}
	return nil
}
func (loss) Applies(impls.Design, Workload) error { return nil }

func (f loss) Run(ctx context.Context, env *Env) error {
	return onLinks(ctx, env, f.Name(), func(l *cluster.Link, _ []string) error { return l.Lose(f.Name(), env.Loss) })
}
