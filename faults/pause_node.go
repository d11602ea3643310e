package faults

import (
	"context"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

func init() { Register(pauseNode{}) }

// pauseNode freezes servers with SIGSTOP: they keep their sockets open but
// answer nothing, like a machine in a long GC or swap storm. Jepsen's etcd
// test (docs/anomalies.md row 14) pauses servers this way.
type pauseNode struct{}

func (pauseNode) Name() string { return "pause-node" }
func (pauseNode) Description() string {
	return "SIGSTOP servers for the fault duration, then SIGCONT"
}
func (pauseNode) Traits() Traits {
	return Traits{Aim: history.AimServers, Targets: NodeTargets, Target: "node", Servers: ServersSignalled, Seizes: SeizeServerProcess,
		Size: Size{Sweeps: []Vary{VaryPause}, Moment: MomentGrant}}
}
func (pauseNode) Applies(impls.Design, Workload) error { return nil }

func (f pauseNode) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(context.Context) (hit, error) {
		nodes := env.pickNodes()
		heal, err := onAll(nodes, func(n *cluster.Node) error { return n.Process().Pause() },
			func(n *cluster.Node) error { return n.Process().Resume() })
		if err != nil {
			return hit{}, err
		}
		return hit{target: nodeNames(nodes), heal: heal}, nil
	})
}
