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

func init() {
	Register(&clusterFailover{name: "cluster-failover", moment: MomentRelease,
		description: "cut the lock key's Redis Cluster primary off from the other nodes (not from clients) until the majority promotes its replica",
		traits:      Traits{Aim: history.AimServers, Links: true, Net: NetKernel, OwnSchedule: true},
		fail:        cutFromPeers})
	Register(&clusterFailover{name: "cluster-failover-kill", moment: MomentGrant,
		description: "SIGKILL the lock key's Redis Cluster primary right after a grant; restart it (empty) once its replica is promoted and the fault duration passed",
		traits:      Traits{Aim: history.AimServers, OwnSchedule: true, Seizes: SeizeServerProcess},
		fail:        func(_ *Env, _ string, n *cluster.Node) (func() error, error) { return killRestart(n) }})
	Register(&clusterFailover{name: "cluster-failover-pause", moment: MomentGrant,
		description: "SIGSTOP the lock key's Redis Cluster primary right after a grant; SIGCONT it once its replica is promoted and the fault duration passed",
		traits:      Traits{Aim: history.AimServers, OwnSchedule: true, Servers: ServersSignalled, Seizes: SeizeServerProcess},
		fail:        func(_ *Env, _ string, n *cluster.Node) (func() error, error) { return pauseResume(n) }})
}

// clusterFailover fails the primary that serves the lock key, waits for
// the majority to promote its replica, and after the fault duration lets
// the old primary rejoin as a replica. How it fails is the variant.
//
// cluster-failover is Redis Cluster's own window for losing writes: the
// primary is cut off from every other node of the cluster, not from its
// clients, as a holder gives the lock back. For up to cluster-node-timeout
// it keeps granting the lock to the clients that reach it, writes its
// replica never receives; the majority promotes that replica, and clients
// that load the new slot map are granted the lock again on a node that
// never saw the first grant. On heal the old primary rejoins as a replica,
// dropping what it granted alone. Only the kernel makes this cut: the nodes
// dial each other at the addresses they gossip, which no proxy stands
// between.
//
// The kill and pause variants are the failures operators meet, aimed right
// after a grant: they lose the grant only if the primary fails before the
// grant reaches its replica, which on loopback takes microseconds.
type clusterFailover struct {
	name, description string
	// moment is when the primary fails: a release (the grant that follows
	// is made alone) or a grant (the one just made may not be replicated).
	moment string
	traits Traits
	// fail makes the primary fail and returns how it comes back.
	fail func(env *Env, fault string, primary *cluster.Node) (func() error, error)
}

func (f clusterFailover) Name() string        { return f.name }
func (f clusterFailover) Description() string { return f.description }
func (f clusterFailover) Traits() Traits      { return f.traits }

func (f clusterFailover) Applies(d impls.Design, _ Workload) error {
	if !redisCluster(d) {
		return fmt.Errorf("%s needs a Redis Cluster design (e.g. redis-cluster); for Sentinel use failover", f.name)
	}
	return nil
}

// cutFromPeers cuts the link on which every other server reaches n.
func cutFromPeers(env *Env, fault string, n *cluster.Node) (func() error, error) {
	for _, l := range env.Links {
		if l.Name == cluster.LinkName(cluster.PeersEnd, n.Name) {
			if err := l.Cut(fault); err != nil {
				return nil, err
			}
			return func() error { return l.Heal(fault) }, nil
		}
	}
	return nil, fmt.Errorf("no link on which the other nodes reach %s (the cut needs --network netns)", n.Name)
}

// pauseResume freezes n now and returns its thaw.
func pauseResume(n *cluster.Node) (func() error, error) {
	if err := n.Process().Pause(); err != nil {
		return nil, err
	}
	return n.Process().Resume, nil
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
		return fmt.Errorf("%s: the deployment is not a Redis Cluster", f.name)
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
		if _, err := env.Await(ctx, f.moment); err != nil {
			return nil
		}
		back, err := f.fail(env, f.name, old)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		env.Started(Strike{Fault: f.name, Target: old.Name})
		err = f.recover(ctx, env, rc, back, replica)
		env.Stopped(f.name, old.Name, 0)
		if err != nil {
			return err
		}
	}
	return nil
}

// recover waits for the replica's promotion and the fault duration, brings
// the old primary back, and waits for the cluster to settle with it as a
// replica. A strike runs its whole course even when the run is ending: a
// killed primary restarted before its replica is promoted comes back
// empty as the primary, and its replica, resyncing from it, drops every
// lock too — another fault than the one asked for.
func (f clusterFailover) recover(ctx context.Context, env *Env, rc *cluster.RedisCluster, back func() error, replica *cluster.Node) error {
	ctx = context.WithoutCancel(ctx)
	wctx, cancel := context.WithTimeout(ctx, promoteTimeout)
	defer cancel()
	if !waitRole(ctx, replica, cluster.RolePrimary) {
		env.Log.Warn("the majority did not promote the replica in time", "fault", f.name, "replica", replica.Name, "waited", promoteTimeout)
	}
	sleep(ctx, env.Duration)
	backErr := back()
	if err := rc.WaitSettled(wctx); err != nil {
		return errors.Join(backErr, fmt.Errorf("%s: after the old primary came back: %w", f.name, err))
	}
	return backErr
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
