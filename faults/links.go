package faults

import (
	"context"
	"errors"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/scenario"
)

// linkTraits are the traits of a fault on links: it aims at a node's
// links by default, takes any client or node target, and may wait for a
// client's lock moment.
func linkTraits(warn func(scenario.Config, Target) []string) Traits {
	return Traits{Aim: history.AimLinks, Targets: LinkTargets, Target: "node", Servers: ServersUntouched,
		Links: true, Warn: warn}
}

// onLinks is the schedule of the link faults: each time, pick the target's
// links, apply the effect to each, and heal only this fault's effects.
// apply learns which ends of the link the target is (see pickLinks).
func onLinks(ctx context.Context, env *Env, fault string, apply func(l *cluster.Link, ends []string) error) error {
	return every(ctx, env, fault, func(ctx context.Context) (hit, error) {
		links, target, ends, err := env.pickLinks(ctx)
		if err != nil {
			return hit{}, err
		}
		if len(links) == 0 {
			return hit{}, errors.New("target " + target + " has no links")
		}
		do := func(l *cluster.Link) error { return apply(l, ends) }
		heal, err := onAll(links, do, func(l *cluster.Link) error { return l.Heal(fault) })
		if err != nil {
			return hit{}, err
		}
		return hit{target: target, heal: heal}, nil
	})
}
