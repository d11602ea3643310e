package impls

import (
	"context"
	"strings"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/registry"
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
	// LockDelay, in TTLs, is how long a lease that expired instead of
	// being released keeps the lock unavailable (Chubby's lock-delay); 0
	// for none. A pause of the holder must then outlive TTL + lock-delay
	// to let another client in, which envelope sweeps.
	LockDelay float64
	// PlainNodes: Deploy starts len(Roles) servers that need nothing from
	// locktest but to listen (no replication, Sentinel, cluster
	// membership, schema or users to set up), and a client needs nothing
	// but their addresses. Such a design can run against servers the user
	// runs instead (--servers, OnServers).
	PlainNodes bool
	// Check, if set, says before anything starts whether what the design
	// needs beyond Binaries is installed (a library, a built client).
	Check func() error
	// Version, if set, names the installed version of the library the
	// design wraps, read when asked, so a listing shows what would run.
	Version func() string
	// Deploy starts the design's servers in c.
	Deploy func(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error)
	// New builds one client; called in the worker process.
	New func(cfg lock.Config) (lock.Lock, error)
}

var designs = registry.New("impl", func(d Design) string { return d.Name })

// Register adds a design; each design file calls it from init.
func Register(d Design) { designs.Register(d) }

// Lookup returns a design by name, or an error listing the valid names.
func Lookup(name string) (Design, error) { return designs.Lookup(name) }

// All returns the designs sorted by name.
func All() []Design { return designs.All() }

// Names returns the registered design names, sorted.
func Names() []string { return designs.Names() }

// FileName is a design's name where it names a directory or a scenario:
// the ':' of lib:NAME would read as a URL scheme in a report's links.
func FileName(design string) string { return strings.ReplaceAll(design, ":", "-") }
