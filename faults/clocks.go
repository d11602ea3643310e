package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
)

// libcClocks are the servers that read wall time through libc, which the
// clock shim can move. Go servers (etcd) read the vDSO directly.
var libcClocks = map[string]bool{"redis-server": true, "redis-sentinel": true}

// serverClock is the common part of the faults that move servers' wall
// clocks: what they apply to and how they pick and reset clocks.
type serverClock struct{}

func (serverClock) Targets() (Targets, string) { return NodeTargets, "node" }
func (serverClock) MovesServerClocks()         {}
func (serverClock) LinkFree()                  {}

func (serverClock) Applies(d impls.Design, _ string) error {
	for bin := range d.Binaries {
		if !libcClocks[bin] {
			return fmt.Errorf("%s does not read its clock through libc, so the clock shim cannot move it (clock faults need redis-server or redis-sentinel)", bin)
		}
	}
	return nil
}

// strike sets every picked node's clock offset; hold, if given, runs
// while the fault lasts (clock-strobe oscillates there).
func (serverClock) strike(env *Env, hold func(ctx context.Context, nodes []*cluster.Node)) (hit, error) {
	nodes := env.pickNodes()
	set := func(d time.Duration) func(*cluster.Node) error {
		return func(n *cluster.Node) error {
			if n.Clock == nil {
				return fmt.Errorf("%s runs without the clock shim", n.Name)
			}
			return n.Clock.SetOffset(d)
		}
	}
	heal, err := onAll(nodes, set(env.ClockDelta), set(0))
	if err != nil {
		return hit{}, err
	}
	h := hit{target: nodeNames(nodes) + " " + signed(env.ClockDelta), heal: heal}
	if hold != nil {
		h.hold = func(ctx context.Context) { hold(ctx, nodes) }
	}
	return h, nil
}

// signed formats a clock shift with its sign, as "+2s" or "-500ms".
func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}
