package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

// libcClocks are the servers that read wall time through libc, which the
// clock shim can move. Go servers (etcd) read the vDSO directly.
var libcClocks = map[string]bool{"redis-server": true, "redis-sentinel": true}

// serverClock is the common part of the faults that move servers' wall
// clocks: what they apply to and how they pick and reset clocks.
type serverClock struct{ name string }

// Traits: a server's clock decides a lease only where the lock lives, so
// a sweep jumps every server that holds it, not one drawn at random among
// replicas and Sentinels, which would make a safe point no try at all.
func (f serverClock) Name() string { return f.name }

func (f serverClock) Traits() Traits {
	return Traits{Aim: history.AimClocks, Targets: NodeTargets, Target: "node", ServerClocks: true, Seizes: SeizeServerClocks,
		Size: Size{Setting: "clock-delta", Sweeps: []Vary{VaryClock}, Moment: MomentGrant, Target: TargetLockServers},
		Warn: warnClockJump(f.name)}
}

// warnClockJump warns when a jump of a server's clock cannot expire a held
// key early: a key is at most --hold-max old while held, and a jump of
// delta either way (the heal jumps back) expires only keys with less left.
func warnClockJump(name string) func(scenario.Config, Target) []string {
	return func(c scenario.Config, _ Target) []string {
		delta, hold, ttl := time.Duration(c.ClockDelta).Abs(), time.Duration(c.HoldMax), time.Duration(c.TTL)
		if delta+hold >= ttl {
			return nil
		}
		return []string{fmt.Sprintf("%s: a clock jump of %s cannot expire a held key early: a key is at most --hold-max %s old while held, "+
			"so more than %s of its --ttl %s is left; use a --clock-delta beyond --ttl", name, delta, hold, ttl-hold, ttl)}
	}
}

// Applies asks the servers' binaries only: an exec design's own program is
// a client, and the servers' clocks are what these faults move.
func (serverClock) Applies(d impls.Design, _ Workload) error {
	for _, bin := range impls.ServerBinaries(d) {
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
