package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "redis-getset",
		Description: "source S3: SETNX key <client time + TTL>; if the stored time is past, GETSET takes over; " +
			"release with DEL if the client's clock says the lease still runs (expiry judged by client clocks)",
		Binaries:   map[string]string{"redis-server": "redis-server"},
		Roles:      lockRoles(1),
		Deploy:     deployRedis(1),
		PlainNodes: true,
		New: func(cfg lock.Config) (lock.Lock, error) {
			cc := &commandCount{}
			rdb := nodeClient(cfg)
			rdb.AddHook(cc)
			return &redisGetset{cfg: cfg, rdb: rdb, commandCount: cc,
				rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client)}, nil
		},
	})
}

// redisGetset keeps no expiry in Redis at all: the key's value is the
// time, on the holder's clock, at which the lease ends, and every client
// judges expiry by its own clock. A client whose clock runs ahead takes
// over a lease that is still running.
type redisGetset struct {
	cfg lock.Config
	rdb *redis.Client
	rng *rand.Rand
	*commandCount
}

func (l *redisGetset) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		now := l.cfg.Clock.Now()
		exp := strconv.FormatInt(now.Add(l.cfg.TTL).UnixMilli(), 10)
		grant := lock.Grant{Owner: exp, Validity: l.cfg.TTL}
		// 1. SETNX key exp.
		ok, err := l.rdb.SetNX(ctx, key, exp, 0).Result()
		if err != nil {
			return lock.Grant{}, tryUnknown, err
		}
		if ok {
			return grant, tryGranted, nil
		}
		// 2. Held: has the holder's time passed, on our clock?
		old, err := l.rdb.Get(ctx, key).Result()
		if err != nil {
			return lock.Grant{}, tryRefused, nil // released meanwhile, or unreadable: nothing written
		}
		oldExp, err := strconv.ParseInt(old, 10, 64)
		if err != nil {
			return lock.Grant{}, tryRefused, fmt.Errorf("lock value %q is not a time", old)
		}
		if oldExp >= now.UnixMilli() {
			return lock.Grant{}, tryRefused, nil
		}
		// 3. Expired: take over with GETSET; we won if nobody else did first
		// (or the key had gone meanwhile, so we just created it).
		cur, err := l.rdb.GetSet(ctx, key, exp).Result()
		switch {
		case errors.Is(err, redis.Nil) || (err == nil && cur == old):
			return grant, tryGranted, nil
		case err != nil:
			return lock.Grant{}, tryUnknown, err
		}
		return lock.Grant{}, tryRefused, nil
	})
}

// Release is source S3's step 5: DEL if the lease has not run out by our
// clock; otherwise leave the key alone, it is someone else's to take.
func (l *redisGetset) Release(ctx context.Context, key string, g lock.Grant) error {
	exp, err := strconv.ParseInt(g.Owner, 10, 64)
	if err != nil {
		return fmt.Errorf("release: bad grant %q: %w", g.Owner, err)
	}
	if l.cfg.Clock.Now().UnixMilli() >= exp {
		return lock.ErrNotHeld
	}
	n, err := l.rdb.Del(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if n == 0 {
		return lock.ErrNotHeld
	}
	return nil
}

func (l *redisGetset) Close() error { return l.rdb.Close() }
