package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	for _, elapsed := range []bool{true, false} {
		d := Design{
			Name: "redlock",
			Description: "Redlock over 5 independent Redis nodes: SET NX PX on all in parallel, quorum 3, " +
				"validity = TTL - elapsed - drift, give back everywhere on failure",
			Binaries:    map[string]string{"redis-server": "redis-server"},
			Roles:       lockRoles(redlockNodes),
			Deploy:      deployRedis(redlockNodes),
			PlainNodes:  true,
			Checkpoints: []string{lock.CheckpointGranted},
			New:         func(cfg lock.Config) (lock.Lock, error) { return newRedlock(cfg, elapsed), nil },
		}
		if !elapsed {
			d.Name = "redlock-noelapsed"
			d.Description = "redlock without the elapsed-time check (validity = TTL - drift): the control for a client paused during acquire"
		}
		Register(d)
	}
}

// Redlock's parameters, shared with the redsync design so that both run
// the same algorithm with the same numbers.
const (
	redlockNodes  = 5
	redlockQuorum = redlockNodes/2 + 1
	// redlockTimeoutFactor sizes each node's request timeout as a fraction
	// of the TTL: small, so an unreachable node costs little of the lease.
	redlockTimeoutFactor = 0.1
	redlockDriftFactor   = 0.01
)

// redlockDrift is antirez's allowance for clock drift between nodes:
// 1% of the TTL plus 2 ms.
func redlockDrift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*redlockDriftFactor) + 2*time.Millisecond
}

// quorumWatch is a go-redis hook on every node connection of one client.
// It counts SET NX replies that granted since the last reset and reaches
// lock.CheckpointGranted on the one that makes a quorum: the replies are in
// and the client has not yet computed the validity. It sees the same commands
// whether our code or redsync sends them, so both pause at the same point.
type quorumWatch struct {
	cfg    lock.Config
	grants atomic.Int32
}

func (q *quorumWatch) reset() { q.grants.Store(0) }

func (q *quorumWatch) DialHook(next redis.DialHook) redis.DialHook { return next }
func (q *quorumWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if b, ok := cmd.(*redis.BoolCmd); ok && err == nil && cmd.Name() == "set" && b.Val() {
			if q.grants.Add(1) == redlockQuorum {
				q.cfg.Reach(lock.CheckpointGranted)
			}
		}
		return err
	}
}
func (q *quorumWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// redlockClients connects to each node. A request is bounded by its
// context (Redlock's per-node timeout), not only by the I/O timeout.
func redlockClients(cfg lock.Config) ([]*redis.Client, *commandCount, *quorumWatch) {
	cc, qw := &commandCount{}, &quorumWatch{cfg: cfg}
	var out []*redis.Client
	for _, addr := range cfg.Nodes {
		o := redisOptions(addr, cfg)
		o.ContextTimeoutEnabled = true
		c := redis.NewClient(o)
		c.AddHook(cc)
		c.AddHook(qw)
		out = append(out, c)
	}
	return out, cc, qw
}

// redlock is our implementation of antirez's algorithm.
type redlock struct {
	cfg   lock.Config
	nodes []*redis.Client
	watch *quorumWatch
	// elapsed: subtract the time the acquire took from the validity.
	elapsed bool
	rng     *rand.Rand
	seq     int
	*commandCount
}

func newRedlock(cfg lock.Config, elapsed bool) *redlock {
	nodes, cc, qw := redlockClients(cfg)
	return &redlock{cfg: cfg, nodes: nodes, watch: qw, elapsed: elapsed, commandCount: cc,
		rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client)}
}

// onAll runs f on every node in parallel, each bounded by the per-node
// timeout, and counts yes, no and unknown answers.
func (l *redlock) onAll(ctx context.Context, f func(ctx context.Context, c *redis.Client) (bool, error)) (yes, no int, errs []error) {
	timeout := time.Duration(float64(l.cfg.TTL) * redlockTimeoutFactor)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range l.nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ok, err := f(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("node %d: %w", i, err))
			case ok:
				yes++
			default:
				no++
			}
		})
	}
	wg.Wait()
	return yes, no, errs
}

func (l *redlock) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	l.seq++
	owner := fmt.Sprintf("c%d-%d-%x", l.cfg.Client, l.seq, l.rng.Uint32())
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		return l.try(ctx, key, owner)
	})
}

// try is one round of Redlock. A round that fails gives back whatever it
// got; it is a definite refusal when no quorum can hold our value: too
// many nodes refused, or every node confirmed the give-back.
func (l *redlock) try(ctx context.Context, key, owner string) (lock.Grant, tryResult, error) {
	l.watch.reset()
	start := l.cfg.Clock.Now()
	granted, refused, errs := l.onAll(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		return c.SetNX(ctx, key, owner, l.cfg.TTL).Result()
	})
	validity := l.cfg.TTL - redlockDrift(l.cfg.TTL)
	if l.elapsed {
		validity -= l.cfg.Clock.Now().Sub(start)
	}
	if granted >= redlockQuorum && validity > 0 {
		return lock.Grant{Owner: owner, Validity: validity}, tryGranted, nil
	}
	_, _, giveBack := l.onAll(context.WithoutCancel(ctx), l.deleteOwn(key, owner))
	if refused > redlockNodes-redlockQuorum || len(giveBack) == 0 {
		return lock.Grant{}, tryRefused, nil
	}
	return lock.Grant{}, tryUnknown, fmt.Errorf("redlock: %d granted, %d refused, %v; giving back failed: %w",
		granted, refused, errors.Join(errs...), errors.Join(giveBack...))
}

// deleteOwn is the compare-and-delete of the lock on one node.
func (l *redlock) deleteOwn(key, owner string) func(ctx context.Context, c *redis.Client) (bool, error) {
	return func(ctx context.Context, c *redis.Client) (bool, error) {
		n, err := compareAndDelete(ctx, c, key, owner)
		return n == 1, err
	}
}

// Release deletes our value everywhere. The lock was still ours if a
// quorum of nodes still had it.
func (l *redlock) Release(ctx context.Context, key string, g lock.Grant) error {
	deleted, _, errs := l.onAll(ctx, l.deleteOwn(key, g.Owner))
	switch {
	case deleted >= redlockQuorum:
		return nil
	case len(errs) > 0:
		return fmt.Errorf("release: %d nodes had our lock, %w", deleted, errors.Join(errs...))
	}
	return lock.ErrNotHeld
}

func (l *redlock) Close() error {
	var errs []error
	for _, c := range l.nodes {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
