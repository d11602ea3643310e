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
	"github.com/locktest/locktest/scenario"
)

func init() { Register(failover{}) }

// failover loses a grant the way an asynchronous primary does: the lock
// is written to the primary, the primary fails before the write reaches
// the replica that Sentinel promotes, and clients move to the promoted
// replica, which never saw it.
//
// On loopback replication takes microseconds, so waiting for a crash to
// land in that gap would take forever. Instead the fault opens the gap:
// Sentinel is told to fail over now (SENTINEL FAILOVER), which detaches
// the chosen replica. The clients are cut off from the Sentinels, as a
// client partitioned with the old primary is, so they keep using it; the
// next grant it makes is therefore one the new primary will not have, and
// the old primary is frozen (SIGSTOP) right after it, as if it had died.
// Then the clients reach the Sentinels again and find the new primary;
// after the fault duration the old one is continued and Sentinel turns it
// into a replica, dropping the lost writes. Without the cut, clients learned of the switch before
// the next grant in more than half the failovers (measured with 1.5-1.8 s
// holds), and a run with three or four of them was safe one time in ten.
type failover struct{}

func (failover) Name() string { return "failover" }
func (failover) Description() string {
	return "Sentinel promotes a replica; clients cut off from Sentinel get one more grant from the old primary, which then freezes for the fault duration"
}

// Traits: it cuts the clients from the Sentinels (links), tells Sentinel
// to fail over and freezes the old primary.
func (failover) Traits() Traits {
	return Traits{Aim: history.AimServers, Links: true, OwnSchedule: true,
		Warn: func(c scenario.Config, _ Target) []string {
			// Clients stay on the old primary, frozen after its last
			// grant, until a request to it times out.
			hold, io := time.Duration(c.HoldMax), time.Duration(c.IOTimeout)
			if hold >= io {
				return nil
			}
			return []string{fmt.Sprintf("failover: holds end within --hold-max %s, before any other client can reach the promoted replica "+
				"(each first times out on the frozen old primary, after --io-timeout %s), so the lost grant never "+
				"overlaps another; use a --hold-max above --io-timeout (1-2 s works)", hold, io)}
		}}
}

func (failover) Applies(d impls.Design, _ Workload) error {
	if !slices.Contains(d.Roles, cluster.RolePrimary) || !slices.Contains(d.Roles, cluster.RoleSentinel) {
		return errors.New("failover needs a design whose lock lives on a primary with replicas under Sentinel (e.g. redis-replicated)")
	}
	return nil
}

// promoteTimeout bounds how long Sentinel may take to finish a failover.
const promoteTimeout = 30 * time.Second

func (failover) Run(ctx context.Context, env *Env) error {
	rep := cluster.ReplicatedOf(env.Nodes)
	if rep == nil {
		return errors.New("failover: the deployment has no Sentinels and replicated primary")
	}
	for env.Wait(ctx) {
		old, err := rep.Primary(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		replicas, err := rep.WaitReplicas(ctx, old)
		if err != nil {
			return nil // the run ended before the last failover settled
		}
		if err := rep.Failover(ctx); err != nil {
			// Sentinel refuses while a replica is still resynchronising
			// after the previous failover; try again at the next turn.
			env.Log.Warn("sentinel refused a failover; retrying later", "err", err)
			continue
		}
		env.Started(Strike{Fault: "failover", Target: old.Name})
		err = failOver(ctx, env, rep, old, replicas)
		env.Stopped("failover", old.Name, 0)
		if err != nil {
			return err
		}
	}
	return nil
}

// failOver runs one failover that Sentinel has started. It always waits
// for Sentinel to finish, even when the run is ending, so that the run
// ends on a settled cluster with every node running.
func failOver(ctx context.Context, env *Env, rep *cluster.Replicated, old *cluster.Node, replicas []*cluster.Node) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), promoteTimeout)
	defer cancel()
	if _, err := rep.WaitPromoted(wctx, replicas); err != nil {
		return err
	}
	heal, err := onAll(sentinelLinks(env, rep), func(l *cluster.Link) error { return l.Cut("failover") },
		func(l *cluster.Link) error { return l.Heal("failover") })
	if err != nil {
		return err
	}
	// The clients stay on the old primary until it grants the lock once
	// more, or for the fault duration.
	hctx, hcancel := context.WithTimeout(ctx, env.Duration)
	defer hcancel()
	_, noGrant := env.NextHolder(hctx)
	if ctx.Err() != nil { // the run is ending
		return errors.Join(heal(), waitNew(wctx, rep, old))
	}
	p := old.Process()
	if err := p.Pause(); err != nil {
		return errors.Join(err, heal())
	}
	if noGrant == nil {
		env.Log.Info("froze the old primary right after a grant it could not replicate", "node", old.Name)
	}
	// It stays down for the fault duration: every client times out on it
	// and asks the Sentinels again, which drops its connections to it.
	// Resumed sooner, it would still be the primary to a client that
	// missed the switch while it was cut off.
	err = errors.Join(heal(), waitNew(wctx, rep, old))
	sleep(ctx, env.Duration)
	return errors.Join(err, p.Resume())
}

func waitNew(ctx context.Context, rep *cluster.Replicated, old *cluster.Node) error {
	_, err := rep.WaitNewPrimary(ctx, old)
	return err
}

// sentinelLinks are the links on which clients ask the Sentinels where
// the primary is.
func sentinelLinks(env *Env, rep *cluster.Replicated) []*cluster.Link {
	var out []*cluster.Link
	for _, l := range env.Links {
		if history.IsClient(l.From) && slices.ContainsFunc(rep.Sentinels, func(s *cluster.Node) bool { return s.Name == l.To }) {
			out = append(out, l)
		}
	}
	return out
}
