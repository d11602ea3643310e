package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	for _, v := range []struct {
		name, description string
		extend            []redsync.Option
	}{
		{"redsync", "github.com/go-redsync/redsync/v4 (a Redlock library) over the same 5 nodes, " +
			"one TryLock per try in the harness's acquire loop; Extend renews", nil},
		{"redsync-setnx-extend", "redsync whose Extend also sets the key again on nodes that lost it " +
			"(WithSetNXOnExtend, redsync PR #149)", []redsync.Option{redsync.WithSetNXOnExtend()}},
	} {
		Register(Design{
			Name:        v.name,
			Description: v.description,
			Renews:      true,
			Binaries:    map[string]string{"redis-server": "redis-server"},
			Roles:       lockRoles(redlockNodes),
			Deploy:      deployRedis(redlockNodes),
			PlainNodes:  true,
			Checkpoints: []string{lock.CheckpointGranted},
			New:         func(cfg lock.Config) (lock.Lock, error) { return newRedsync(cfg, v.extend) },
		})
	}
}

// redsyncLock drives redsync with the same node connections, timeouts and
// retry loop as our redlock, so that only the library differs.
type redsyncLock struct {
	cfg     lock.Config
	clients []*redis.Client
	rs      *redsync.Redsync
	watch   *quorumWatch
	rng     *rand.Rand
	// extend are the options of a renewal's mutex: how it treats a node
	// that lost the key.
	extend []redsync.Option
	*commandCount
}

func newRedsync(cfg lock.Config, extend []redsync.Option) (lock.Lock, error) {
	clients, cc, qw := redlockClients(cfg)
	pools := make([]redsyncredis.Pool, len(clients))
	for i, c := range clients {
		pools[i] = goredis.NewPool(c)
	}
	return &redsyncLock{cfg: cfg, clients: clients, rs: redsync.New(pools...), watch: qw, commandCount: cc,
		rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client), extend: extend}, nil
}

func (l *redsyncLock) mutex(key string, opts ...redsync.Option) *redsync.Mutex {
	return l.rs.NewMutex(key, append([]redsync.Option{
		redsync.WithExpiry(l.cfg.TTL), redsync.WithTries(1),
		redsync.WithTimeoutFactor(redlockTimeoutFactor), redsync.WithDriftFactor(redlockDriftFactor),
	}, opts...)...)
}

func (l *redsyncLock) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		l.watch.reset()
		m := l.mutex(key)
		err := m.TryLockContext(ctx)
		if err == nil {
			return lock.Grant{Owner: m.Value(), Validity: time.Until(m.Until())}, tryGranted, nil
		}
		return lock.Grant{}, redsyncOutcome(err), err
	})
}

// redsyncOutcome reads a failed TryLock. redsync gives back what it got
// but does not say whether that worked, so a round is a definite refusal
// only when no quorum can hold our value: a quorum of nodes said taken,
// or the nodes that granted plus those that did not answer are too few.
// ErrFailed after a single try means every node granted and the validity
// had run out: redsync's give-back is unconfirmed, so that is unknown.
func redsyncOutcome(err error) tryResult {
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		return tryRefused
	}
	if errors.Is(err, redsync.ErrFailed) {
		return tryUnknown
	}
	var refused, unanswered int
	for _, e := range flatten(err) {
		var nt *redsync.ErrNodeTaken
		var re *redsync.RedisError
		switch {
		case errors.As(e, &nt):
			refused++
		case errors.As(e, &re):
			unanswered++
		}
	}
	granted := redlockNodes - refused - unanswered
	if granted+unanswered < redlockQuorum {
		return tryRefused
	}
	return tryUnknown
}

// flatten lists the errors inside an errors.Join.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// Renew extends the lease through redsync's Extend. By default Extend
// only touches nodes that still hold our value, so a node that restarted
// empty is never written again: restarts one after another shrink the set
// that holds the lock (redsync #147, #149). A quorum of definite refusals is
// a lost lease; anything less certain is an unknown outcome.
func (l *redsyncLock) Renew(ctx context.Context, key string, g lock.Grant) (lock.Grant, error) {
	m := l.mutex(key, append([]redsync.Option{redsync.WithValue(g.Owner)}, l.extend...)...)
	ok, err := m.ExtendContext(ctx)
	if ok {
		g.Validity = time.Until(m.Until())
		return g, nil
	}
	err = fmt.Errorf("redsync extend: %w", err)
	if redsyncOutcome(err) == tryRefused {
		return g, lock.Definite(err)
	}
	return g, err
}

// Release unlocks through redsync: true means a quorum still had our value.
func (l *redsyncLock) Release(ctx context.Context, key string, g lock.Grant) error {
	ok, err := l.mutex(key, redsync.WithValue(g.Owner)).UnlockContext(ctx)
	if ok {
		return nil
	}
	var re *redsync.RedisError
	for _, e := range flatten(err) {
		if errors.As(e, &re) {
			return fmt.Errorf("redsync unlock: %w", err)
		}
	}
	return lock.ErrNotHeld
}

func (l *redsyncLock) Close() error {
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
