package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "etcd",
		Description: "3-node etcd, concurrency.Session (lease of --ttl, whole seconds, kept alive) + Mutex: " +
			"waiters queue by create revision (no fencing)",
		Binaries:    etcdBinaries,
		Roles:       etcdRoles,
		Checkpoints: []string{lock.CheckpointWaiting},
		Deploy:      deployEtcd,
		New:         func(cfg lock.Config) (lock.Lock, error) { return newEtcdLock(cfg, false) },
	})
	Register(Design{
		Name:        "etcd-fenced",
		Description: "etcd plus the lock key's create revision as the fencing token, checked by the resource",
		Fenced:      true,
		Binaries:    etcdBinaries,
		Roles:       etcdRoles,
		Checkpoints: []string{lock.CheckpointWaiting},
		Deploy:      deployEtcd,
		New:         func(cfg lock.Config) (lock.Lock, error) { return newEtcdLock(cfg, true) },
	})
}

// waitingAfter is how long Mutex.Lock must have run before the client
// counts as queued: on loopback an uncontended grant takes a few ms.
const waitingAfter = 100 * time.Millisecond

var (
	etcdBinaries = map[string]string{"etcd": "etcd-server"}
	etcdRoles    = []string{cluster.RoleLeader, cluster.RoleFollower, cluster.RoleFollower}
)

// etcdPrefix is where the lock keys live; a Mutex for key k queues its
// waiters under etcdPrefix+k+"/".
const etcdPrefix = "/locktest/lock/"

func deployEtcd(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
	nodes, err := c.StartEtcd(ctx, 3)
	return Deployment{Nodes: nodes}, err
}

// etcdLock is the etcd client library's own lock: a Session (a lease kept
// alive in the background while the process runs) and a Mutex per key (a
// key under the lock's prefix attached to the lease; the oldest key by
// create revision holds the lock, the others watch their predecessor).
// A lease that expires deletes the key, so a client paused longer than the
// TTL loses the lock without knowing: Jepsen's etcd 3.4.3 finding.
type etcdLock struct {
	cfg    lock.Config
	fenced bool
	cli    *clientv3.Client
	cmds   *atomic.Int64
	// session is the live session, nil once it expired or was dropped;
	// the next acquire starts a new one.
	session *concurrency.Session
	held    map[string]*concurrency.Mutex
	rng     *rand.Rand
}

func newEtcdLock(cfg lock.Config, fenced bool) (*etcdLock, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cfg.Nodes,
		// The client's own logging goes nowhere: outcomes are in the
		// history, and gRPC reconnect chatter would drown the worker log.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	cmds := &atomic.Int64{}
	// Every request is bounded by the I/O timeout, including those the
	// concurrency package sends inside Mutex.Lock and Unlock (a Delete
	// there uses the client's own context and would otherwise wait forever
	// on a partitioned member).
	cli.KV = boundedKV{KV: cli.KV, io: cfg.IOTimeout, n: cmds}
	return &etcdLock{cfg: cfg, fenced: fenced, cli: cli, cmds: cmds, held: map[string]*concurrency.Mutex{},
		rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client)}, nil
}

func (l *etcdLock) Commands() int64 { return l.cmds.Load() }

// ttlSeconds is --ttl in the whole seconds an etcd lease takes, rounded up.
func (l *etcdLock) ttlSeconds() int64 {
	return max(1, int64((l.cfg.TTL+time.Second-1)/time.Second))
}

// liveSession returns the session, starting a new one (a new lease) when
// there is none or the old one expired.
func (l *etcdLock) liveSession(ctx context.Context) (*concurrency.Session, error) {
	if l.session != nil {
		select {
		case <-l.session.Done():
			l.session = nil
		default:
			return l.session, nil
		}
	}
	gctx, cancel := context.WithTimeout(ctx, l.cfg.IOTimeout)
	defer cancel()
	l.cmds.Add(1)
	lease, err := l.cli.Grant(gctx, l.ttlSeconds())
	if err != nil {
		// A lease granted unseen holds no lock and expires by itself.
		return nil, lock.Definite(fmt.Errorf("grant a lease: %w", err))
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(l.ttlSeconds())))
	if err != nil {
		return nil, lock.Definite(fmt.Errorf("keep the lease alive: %w", err))
	}
	l.session = s
	return s, nil
}

// dropSession abandons the session: its keep-alive stops, and it is
// revoked if the servers answer in time. Either way every key on its lease
// is gone within a TTL, so a queue entry an unknown outcome may have left
// cannot block the lock for good.
func (l *etcdLock) dropSession() {
	if l.session == nil {
		return
	}
	l.session.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.IOTimeout)
	defer cancel()
	l.cmds.Add(1)
	_, _ = l.cli.Revoke(ctx, l.session.Lease())
	l.session = nil
}

// Acquire queues with Mutex.Lock until the acquire deadline. A try that
// fails with an unknown outcome (a request timed out, say on a member that
// is paused or cut off) drops the session, so whatever key it may have left
// expires, and tries again with a new one; a session that expired while it
// waited is the library's definite refusal, and ends the acquire.
func (l *etcdLock) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		s, err := l.liveSession(ctx)
		if err != nil {
			return lock.Grant{}, tryRefused, err
		}
		m := concurrency.NewMutex(s, etcdPrefix+key)
		if err := l.lock(ctx, m); err != nil {
			l.dropSession()
			if errors.Is(err, concurrency.ErrSessionExpired) || errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return lock.Grant{}, tryAbort, err
			}
			return lock.Grant{}, tryUnknown, err
		}
		l.held[key] = m
		g := lock.Grant{Owner: m.Key(), Validity: time.Duration(l.ttlSeconds()) * time.Second}
		if l.fenced {
			g.Token = createRevision(m)
		}
		return g, tryGranted, nil
	})
}

// lock runs Mutex.Lock and reports lock.CheckpointWaiting if it is still
// waiting after waitingAfter. A fault stops the client at the checkpoint
// from another goroutine, so Lock may return a grant while the stop is
// under way; that grant is returned only once the client runs again and
// finds its key still there, as Lock itself checks after waiting.
func (l *etcdLock) lock(ctx context.Context, m *concurrency.Mutex) error {
	var mu sync.Mutex
	queued := true
	waited := time.AfterFunc(waitingAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if queued {
			l.cfg.Reach(lock.CheckpointWaiting)
		}
	})
	defer waited.Stop()
	err := m.Lock(ctx)
	stopped := !mu.TryLock() // the checkpoint is under way
	if stopped {
		mu.Lock()
	}
	queued = false
	mu.Unlock()
	if err != nil || !stopped {
		return err
	}
	resp, err := l.cli.Get(ctx, m.Key())
	if err != nil {
		return fmt.Errorf("recheck the grant after a pause: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return concurrency.ErrSessionExpired
	}
	return nil
}

// createRevision is the revision at which the mutex's key was created:
// unique and increasing in grant order, the lock's fencing token. The
// concurrency package keeps it in the owner comparison.
func createRevision(m *concurrency.Mutex) int64 {
	cmp := pb.Compare(m.IsOwner())
	return cmp.GetCreateRevision()
}

// Release deletes the key only if it is still the one we were granted
// (same create revision): a key that expired is not ours to delete, and
// the refusal tells the client it had lost the lock. A release of unknown
// outcome drops the session.
func (l *etcdLock) Release(ctx context.Context, key string, g lock.Grant) error {
	m := l.held[key]
	delete(l.held, key)
	if m == nil {
		return lock.ErrNotHeld
	}
	resp, err := l.cli.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpDelete(m.Key())).Commit()
	if err != nil {
		// The key may still be there, and the session's keep-alive would
		// keep it, and the lock, forever: let it expire instead.
		l.dropSession()
		return fmt.Errorf("release: %w", err)
	}
	if !resp.Succeeded {
		return lock.ErrNotHeld
	}
	return nil
}

func (l *etcdLock) Close() error {
	l.dropSession()
	return l.cli.Close()
}

// boundedKV gives every key-value request its own I/O timeout and counts
// it. A transaction's timeout starts when it is committed.
type boundedKV struct {
	clientv3.KV
	io time.Duration
	n  *atomic.Int64
}

func (k boundedKV) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	k.n.Add(1)
	return context.WithTimeout(ctx, k.io)
}

func (k boundedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	return k.KV.Put(ctx, key, val, opts...)
}

func (k boundedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	return k.KV.Get(ctx, key, opts...)
}

func (k boundedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	return k.KV.Delete(ctx, key, opts...)
}

func (k boundedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	return k.KV.Do(ctx, op)
}

func (k boundedKV) Txn(ctx context.Context) clientv3.Txn { return &boundedTxn{kv: k, ctx: ctx} }

// boundedTxn collects a transaction and sends it, bounded, on Commit.
type boundedTxn struct {
	kv               boundedKV
	ctx              context.Context
	cmps             []clientv3.Cmp
	thenOps, elseOps []clientv3.Op
}

func (t *boundedTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.cmps = append(t.cmps, cs...); return t }
func (t *boundedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.thenOps = append(t.thenOps, ops...)
	return t
}
func (t *boundedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.elseOps = append(t.elseOps, ops...)
	return t
}

func (t *boundedTxn) Commit() (*clientv3.TxnResponse, error) {
	ctx, cancel := t.kv.bound(t.ctx)
	defer cancel()
	return t.kv.KV.Txn(ctx).If(t.cmps...).Then(t.thenOps...).Else(t.elseOps...).Commit()
}
