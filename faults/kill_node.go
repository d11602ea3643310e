package faults

import (
	"context"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

func init() { Register(killNode{}) }

// killNode crashes servers with SIGKILL and restarts them on the same port
// and data directory after the fault duration. What survives depends on the
// design's persistence (--persist: Redis AOF with appendfsync always;
// otherwise nothing is on disk and the server comes back empty), which is
// Redlock's restart problem (docs/anomalies.md row 9).
type killNode struct{}

func (killNode) Name() string { return "kill-node" }
func (killNode) Description() string {
	return "SIGKILL servers, restart them after the fault duration (with their data only under --persist)"
}
func (killNode) Traits() Traits {
	return Traits{Aim: history.AimServers, Targets: NodeTargets, Target: "node", Seizes: SeizeServerProcess}
}
func (killNode) Applies(impls.Design, Workload) error { return nil }

func (f killNode) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(context.Context) (hit, error) {
		nodes := env.pickNodes()
		heal, err := onAll(nodes, (*cluster.Node).Kill, restart)
		if err != nil {
			return hit{}, err
		}
		return hit{target: nodeNames(nodes), heal: heal}, nil
	})
}

// restart starts a killed node again. It runs when the run may be ending,
// so it has its own deadline rather than the run's context.
func restart(n *cluster.Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.Start(ctx)
}
