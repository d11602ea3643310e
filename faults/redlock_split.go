package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

// Kleppmann's Redlock scenarios (docs/anomalies.md rows 8 and 9) start from a
// client that holds the lock on a bare majority of the nodes because it
// could not reach the others when it acquired. One node of that majority
// then forgets the lock (its clock jumps, or it restarts empty), and
// another client, which reaches every node, gets a majority of its own.

// splitApplies accepts designs made of several independent lock nodes.
func splitApplies(d impls.Design, fault string) error {
	if len(d.Roles) < 3 || slices.ContainsFunc(d.Roles, func(r string) bool { return r != cluster.RoleLock }) {
		return fmt.Errorf("%s needs a design with a quorum of independent lock nodes (redlock, redlock-noelapsed, redsync)", fault)
	}
	return nil
}

// runSplit is the schedule both scenarios share:
//
//  1. cut every client from a seeded random minority of the lock nodes and
//     wait a TTL, so that no key is left there;
//  2. wait for a holder: its grant is on the majority only;
//  3. reconnect every other client, and make one node of the majority
//     forget the lock (forget returns the undo);
//  4. after the fault duration undo that and reconnect the holder.
func runSplit(ctx context.Context, env *Env, fault, what string, forget func(n *cluster.Node) (func() error, error)) error {
	for env.Wait(ctx) {
		nodes := lockNodes(env)
		env.Rand.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		minority, majority := nodes[:(len(nodes)-1)/2], nodes[(len(nodes)-1)/2:]
		node := majority[env.Rand.IntN(len(majority))]
		var links []*cluster.Link
		for _, l := range env.Links {
			if history.IsClient(l.From) && slices.ContainsFunc(minority, func(n *cluster.Node) bool { return n.Name == l.To }) {
				links = append(links, l)
			}
		}
		cut := func(l *cluster.Link) error { return l.Cut(fault) }
		heal := func(l *cluster.Link) error { return l.Heal(fault) }
		healAll, err := onAll(links, cut, heal)
		if err != nil {
			return fmt.Errorf("%s: %w", fault, err)
		}
		target := fmt.Sprintf("clients cut from %s, then %s %s", nodeNames(minority), node.Name, what)
		env.Started(Strike{Fault: fault, Target: target})
		err = splitStrike(ctx, env, fault, links, heal, node, forget)
		err = errors.Join(err, healAll())
		env.Stopped(fault, target, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", fault, err)
		}
	}
	return nil
}

// splitStrike runs steps 2 to 4 of runSplit once the cut is in place.
func splitStrike(ctx context.Context, env *Env, fault string, links []*cluster.Link, heal func(*cluster.Link) error,
	node *cluster.Node, forget func(n *cluster.Node) (func() error, error)) error {
	if !sleep(ctx, env.TTL) {
		return nil
	}
	c, err := env.NextHolder(ctx)
	if err != nil {
		return nil // the run is ending
	}
	holder := history.ClientName(c)
	var errs []error
	for _, l := range links {
		if l.From != holder {
			errs = append(errs, heal(l))
		}
	}
	undo, err := forget(node)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	env.Log.Info("the holder has a bare majority; one of its nodes forgot the lock", "fault", fault, "holder", holder, "node", node.Name)
	// Lasts the full duration even when the run is ending: a restart cut
	// short would be the very early restart the duration is to rule out.
	sleep(context.WithoutCancel(ctx), env.Duration)
	return errors.Join(append(errs, undo())...)
}

// lockNodes are the design's independent lock servers.
func lockNodes(env *Env) []*cluster.Node {
	var nodes []*cluster.Node
	for _, n := range env.Nodes {
		if n.Role() == cluster.RoleLock {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// killRestart kills n now and returns its restart.
func killRestart(n *cluster.Node) (func() error, error) {
	if err := n.Kill(); err != nil {
		return nil, err
	}
	return func() error { return restart(n) }, nil
}

// jumpClock moves n's wall clock by d now and returns the way back.
func jumpClock(d time.Duration) func(n *cluster.Node) (func() error, error) {
	return func(n *cluster.Node) (func() error, error) {
		if n.Clock == nil {
			return nil, fmt.Errorf("%s runs without the clock shim", n.Name)
		}
		if err := n.Clock.SetOffset(d); err != nil {
			return nil, err
		}
		return func() error { return n.Clock.SetOffset(0) }, nil
	}
}
