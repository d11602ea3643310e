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

func init() { Register(clusterFailover{}) }

// clusterFailover is Redis Cluster's own window for losing writes: the
// primary that serves the lock key is cut off from every other node of
// the cluster, not from its clients, as a holder gives the lock back. For
// up to cluster-node-timeout it keeps granting the lock to the clients
// that reach it, writes its replica never receives; the majority judges
// it failed and promotes that replica, and clients that load the new slot
// map are granted the lock again on a node that never saw the first grant. After the fault
// duration the cut heals and the old primary rejoins as a replica,
// dropping what it granted alone.
//
// Only the kernel makes this cut: the nodes dial each other at the
// addresses they gossip, which no proxy stands between.
type clusterFailover struct{}

func (clusterFailover) Name() string { return "cluster-failover" }
func (clusterFailover) Description() string {
	return "cut the lock key's Redis Cluster primary off from the other nodes (not from clients) until the majority promotes its replica"
}

func (clusterFailover) Traits() Traits {
	return Traits{Aim: history.AimServers, Links: true, Net: NetKernel, OwnSchedule: true}
}

func (clusterFailover) Applies(d impls.Design, _ Workload) error {
	if !redisCluster(d) {
		return errors.New("cluster-failover needs a Redis Cluster design (e.g. redis-cluster); for Sentinel use failover")
	}
	return nil
}

// redisCluster reports whether d runs Redis primaries with replicas and no
// Sentinel to fail them over: the cluster itself does.
func redisCluster(d impls.Design) bool {
	_, redis := d.Binaries["redis-server"]
	return redis && slices.Contains(d.Roles, cluster.RolePrimary) && !slices.Contains(d.Roles, cluster.RoleSentinel)
}

func (f clusterFailover) Run(ctx context.Context, env *Env) error {
	rc := cluster.RedisClusterOf(env.Nodes)
	if rc == nil || len(env.Keys) == 0 {
		return errors.New("cluster-failover: the deployment is not a Redis Cluster")
	}
	for env.Wait(ctx) {
		key := env.Keys[env.Rand.IntN(len(env.Keys))]
		old, replica, err := rc.Shard(ctx, key)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		cut := peersLink(env, old)
		if cut == nil {
			return fmt.Errorf("cluster-failover: no link on which the other nodes reach %s (the cut needs --network netns)", old.Name)
		}
		// Cut as a holder gives the lock back: the grant that follows
		// within milliseconds is one the replica never receives.
		if _, err := env.Await(ctx, MomentRelease); err != nil {
			return nil
		}
		if err := cut.Cut(f.Name()); err != nil {
			return err
		}
		env.Started(Strike{Fault: f.Name(), Target: old.Name})
		err = cutOff(ctx, env, rc, cut, replica)
		env.Stopped(f.Name(), old.Name, 0)
		if err != nil {
			return err
		}
	}
	return nil
}

// cutOff waits for the replica's promotion and the fault duration, heals
// the cut, and waits for the cluster to settle with the old primary as a
// replica, even when the run is ending, so that it ends on a whole
// cluster.
func cutOff(ctx context.Context, env *Env, rc *cluster.RedisCluster, cut *cluster.Link, replica *cluster.Node) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), promoteTimeout)
	defer cancel()
	promoted := waitRole(ctx, replica, cluster.RolePrimary)
	if !promoted && ctx.Err() == nil {
		env.Log.Warn("the majority did not promote the replica before the fault ended", "replica", replica.Name)
	}
	sleep(ctx, env.Duration)
	healed := cut.Heal("cluster-failover")
	if err := rc.WaitSettled(wctx); err != nil {
		return errors.Join(healed, fmt.Errorf("cluster-failover: after the heal: %w", err))
	}
	return healed
}

// waitRole waits until n says it has role, for at most promoteTimeout.
func waitRole(ctx context.Context, n *cluster.Node, role string) bool {
	ctx, cancel := context.WithTimeout(ctx, promoteTimeout)
	defer cancel()
	for n.Role() != role {
		if !sleep(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return true
}

// peersLink is the link on which every other server reaches n.
func peersLink(env *Env, n *cluster.Node) *cluster.Link {
	for _, l := range env.Links {
		if l.Name == cluster.LinkName(cluster.PeersEnd, n.Name) {
			return l
		}
	}
	return nil
}
