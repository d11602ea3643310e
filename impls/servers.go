package impls

import (
	"context"
	"fmt"
	"strings"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
)

// OnServers returns d run against servers the user runs (--servers)
// instead of those its Deploy starts, so that a lock with servers locktest
// cannot start (a company's own service, a managed Redis) still meets the
// faults of links and, given pids, of paused servers. The servers are d's
// nodes in d's order: as many as d has (len(Roles)), or, for a design that
// does not say (exec), any number.
//
// Only designs with PlainNodes take them: locktest cannot set up the
// replication, Sentinel or cluster membership of servers it does not own.
// Check adds a dial of every server and a look at every pid, before
// anything starts; the binaries of d's servers are no longer needed, and
// no longer named, so no version of them is claimed.
func OnServers(d Design, servers []cluster.UserServer) (Design, error) {
	if !d.PlainNodes {
		return d, fmt.Errorf("--servers: impl %s cannot run on servers you run: locktest sets its servers up itself (replication, Sentinel, cluster membership or a schema); impls that take --servers: %s",
			d.Name, strings.Join(PlainNodeNames(), ", "))
	}
	roles := d.Roles
	switch {
	case len(roles) == 0:
		roles = make([]string, len(servers))
		for i := range roles {
			roles[i] = cluster.RoleLock
		}
	case len(servers) != len(roles):
		return d, fmt.Errorf("--servers: impl %s runs on %d server(s), %d given", d.Name, len(roles), len(servers))
	}
	u := d
	u.Roles = roles
	// Binaries with a package are the design's servers; the one without
	// is the user's lock program (exec), which still runs.
	u.Binaries = map[string]string{}
	for b, pkg := range d.Binaries {
		if pkg == "" {
			u.Binaries[b] = pkg
		}
	}
	check := d.Check
	u.Check = func() error {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		for _, s := range servers {
			if err := s.Check(context.Background()); err != nil {
				return err
			}
		}
		return nil
	}
	u.Deploy = func(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
		nodes, err := c.Adopt(ctx, servers, roles)
		return Deployment{Nodes: nodes}, err
	}
	return u, nil
}

// PlainNodeNames lists the designs that take --servers, sorted.
func PlainNodeNames() []string {
	var out []string
	for _, d := range All() {
		if d.PlainNodes {
			out = append(out, d.Name)
		}
	}
	return out
}
