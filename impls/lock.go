package impls

import (
	"context"
	"fmt"
	"sort"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
)

// Deployment is what a design's servers look like once started.
type Deployment struct {
	// Nodes are the servers clients connect to, in lock.Config.Nodes order.
	Nodes []*cluster.Node
}

// Design is a registered lock design.
type Design struct {
	Name        string
	Description string
	// Fenced designs hand out tokens the resource checks.
	Fenced bool
	// Renews: the design's Lock implements Renewer, so workloads that
	// renew leases can run on it.
	Renews bool
	// GuardsWrites: the design's Lock implements GuardedStore and keeps the
	// protected data itself; the run starts no resource node.
	GuardsWrites bool
	// Binaries the design's servers need, checked before anything starts:
	// binary name → Debian package.
	Binaries map[string]string
	// Roles lists the role of each server Deploy starts (cluster.RoleLock,
	// RolePrimary, …), so that a fault aimed at a role or a minority is
	// refused up front when the design has none. Empty: checked only once
	// the servers run.
	Roles []string
	// Checkpoints lists the Config.Checkpoint points the client reports.
	Checkpoints []string
	// Deploy starts the design's servers in c.
	Deploy func(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error)
	// New builds one client; called in the worker process.
	New func(cfg lock.Config) (lock.Lock, error)
}

var registry = map[string]Design{}

// Register adds a design; each design file calls it from init.
func Register(d Design) {
	if _, dup := registry[d.Name]; dup {
		panic("impls: duplicate design " + d.Name)
	}
	registry[d.Name] = d
}

// Lookup returns a design by name, or an error listing the valid names.
func Lookup(name string) (Design, error) {
	d, ok := registry[name]
	if !ok {
		return Design{}, fmt.Errorf("unknown impl %q (valid: %v)", name, Names())
	}
	return d, nil
}

// All returns the designs sorted by name.
func All() []Design {
	out := make([]Design, 0, len(registry))
	for _, d := range registry {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the registered design names, sorted.
func Names() []string {
	var names []string
	for _, d := range All() {
		names = append(names, d.Name)
	}
	return names
}
