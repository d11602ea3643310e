package impls

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "redis-reentrant",
		Description: "source S1 (Spring RedisLockRegistry style): a local lock, then a remote lock whose Lua " +
			"script re-enters for the same process id and refreshes the TTL; fixed 100 ms spin; GET-then-DEL release",
		Binaries:   map[string]string{"redis-server": "redis-server"},
		Roles:      lockRoles(1),
		Deploy:     deployRedis(1),
		PlainNodes: true,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisReentrant(cfg, nodeClient(cfg)), nil
		},
	})
}

// reentrantSpin is source S1's fixed sleep between tries.
const reentrantSpin = 100 * time.Millisecond

// reentrantScript is source S1's OBTAIN_LOCK_SCRIPT: our process id already
// there means we re-enter and refresh the TTL; a free key is taken. (The
// seed's EXPIRE lacks its key; this is what it meant.)
var reentrantScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`)

// redisReentrant holds a per-key local lock around the remote one, so
// that threads of one process queue locally and only one of them spins on
// Redis. A worker drives one cycle at a time, so the local lock is never
// contended here; it still costs nothing remote, which is what the
// commands-per-acquisition figure shows.
type redisReentrant struct {
	*redisSingle
	local map[string]chan struct{}
}

func newRedisReentrant(cfg lock.Config, rdb redis.UniversalClient) *redisReentrant {
	id := fmt.Sprintf("c%d-%x", cfg.Client, seed.Stream(cfg.Seed, seed.Locks, cfg.Client).Uint64())
	s := newRedisSingle(cfg, rdb, singleOpts{owner: id, sleep: reentrantSpin,
		acquire: func(ctx context.Context, rdb redis.UniversalClient, key, owner string, cfg lock.Config, _ bool) (int64, error) {
			return reentrantScript.Run(ctx, rdb, []string{key}, owner, cfg.TTL.Milliseconds()).Int64()
		},
		release: getThenDel})
	return &redisReentrant{redisSingle: s, local: map[string]chan struct{}{}}
}

// getThenDel is source S1's unlock: GET, and DEL if it is still our id.
// Two commands, not one script: the key can expire and be taken by
// another process between them.
func getThenDel(ctx context.Context, rdb redis.UniversalClient, key, owner string) (int64, error) {
	v, err := rdb.Get(ctx, key).Result()
	if err == redis.Nil || (err == nil && v != owner) {
		return 0, nil // "released in the store due to expiration"
	}
	if err != nil {
		return 0, err
	}
	return rdb.Del(ctx, key).Result()
}

func (l *redisReentrant) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	sem, ok := l.local[key]
	if !ok {
		sem = make(chan struct{}, 1)
		l.local[key] = sem
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return lock.Grant{}, lock.Definite(fmt.Errorf("local lock: %w", ctx.Err()))
	}
	g, err := l.redisSingle.Acquire(ctx, key)
	if err != nil {
		<-sem
	}
	return g, err
}

func (l *redisReentrant) Release(ctx context.Context, key string, g lock.Grant) error {
	defer func() { <-l.local[key] }()
	return l.redisSingle.Release(ctx, key, g)
}
