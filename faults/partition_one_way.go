package faults

import (
	"context"
	"slices"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
)

// A one-way partition: the target stops receiving from the others
// (inbound) or stops sending to them (outbound), while the other way
// works. A server that hears its clients but cannot answer, or answers
// but hears nothing, is a network the two-way partition never makes: a
// lease may be renewed by a holder that cannot learn it was.
func init() {
	Register(partitionOneWay{"partition-inbound", true})
	Register(partitionOneWay{"partition-outbound", false})
}

type partitionOneWay struct {
	name string
	// inbound: packets to the target are dropped; else those from it.
	inbound bool
}

func (f partitionOneWay) Name() string { return f.name }
func (f partitionOneWay) Description() string {
	if f.inbound {
		return "drop every packet to the target from the others on its links, for the fault duration (--network netns)"
	}
	return "drop every packet from the target to the others on its links, for the fault duration (--network netns)"
}
func (partitionOneWay) Traits() Traits {
	t := linkTraits(nil)
	t.Net = NetKernel
	return t
}
func (partitionOneWay) Applies(impls.Design, Workload) error { return nil }

func (f partitionOneWay) Run(ctx context.Context, env *Env) error {
	return onLinks(ctx, env, f.Name(), func(l *cluster.Link, ends []string) error {
		// The target is the link's server end, its dialing end, or both
		// (a link between two targeted servers: both ways).
		atTo, atFrom := slices.Contains(ends, l.To), slices.Contains(ends, l.From)
		if atTo && atFrom {
			return l.Cut(f.Name())
		}
		// Toward To is toward the target when the target is To.
		return l.Drop(f.Name(), atTo == f.inbound)
	})
}
