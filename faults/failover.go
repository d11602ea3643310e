package faults

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
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
// the chosen replica; the next grant the old primary makes is therefore
// one the new primary will not have, and the old primary is frozen
// (SIGSTOP) right after it, as if it had died. Clients find the new
// primary when Sentinel announces it; then the old one is continued and
// Sentinel turns it into a replica, dropping the lost writes.
type failover struct{}

func (failover) Name() string { return "failover" }
func (failover) Description() string {
	return "Sentinel promotes a replica, the old primary grants once more and freezes before replicating it, clients move to the new primary"
}

func (failover) Applies(d impls.Design, _ string) error {
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
		env.Started("failover", old.Name)
		err = failOver(ctx, env, rep, old, replicas)
		env.Stopped("failover", old.Name)
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
	switched := make(chan error, 1)
	go func() {
		_, err := rep.WaitNewPrimary(wctx, old)
		switched <- err
	}()
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	granted := make(chan error, 1)
	go func() {
		_, err := env.NextHolder(hctx)
		granted <- err
	}()
	select {
	case err := <-switched: // no grant on the old primary in between
		return err
	case err := <-granted:
		if err != nil { // the run is ending
			return <-switched
		}
	}
	p := old.Process()
	if err := p.Pause(); err != nil {
		return err
	}
	env.Log.Info("froze the old primary right after a grant it could not replicate", "node", old.Name)
	err := <-switched
	if rerr := p.Resume(); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}
