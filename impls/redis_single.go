package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name:        "redis-single",
		Description: "one Redis node: SET key owner NX PX ttl, release by Lua compare-and-delete (no fencing)",
		Binaries:    map[string]string{"redis-server": "redis-server"},
		Roles:       []string{cluster.RoleLock},
		Deploy:      deployRedis(1),
		PlainNodes:  true,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, nodeClient(cfg), singleOpts{}), nil
		},
	})
	Register(Design{
		Name:        "redis-single-fenced",
		Description: "redis-single plus a fencing token from INCR in the same atomic script, checked by the resource",
		Fenced:      true,
		Binaries:    map[string]string{"redis-server": "redis-server"},
		Roles:       []string{cluster.RoleLock},
		Deploy:      deployRedis(1),
		PlainNodes:  true,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, nodeClient(cfg), singleOpts{fenced: true}), nil
		},
	})
}

// lockRoles are the roles of deployRedis(n)'s servers.
func lockRoles(n int) []string {
	roles := make([]string, n)
	for i := range roles {
		roles[i] = cluster.RoleLock
	}
	return roles
}

// deployRedis starts n independent redis-server nodes.
func deployRedis(n int) func(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error) {
	return func(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error) {
		var d Deployment
		for i := range n {
			node, err := c.StartRedis(ctx, fmt.Sprintf("redis-%d", i), cluster.RedisOptions{AOFAlways: cfg.Persist})
			if err != nil {
				return d, err
			}
			d.Nodes = append(d.Nodes, node)
		}
		return d, nil
	}
}

// nodeClient connects to the design's one node.
func nodeClient(cfg lock.Config) *redis.Client {
	return redis.NewClient(redisOptions(cfg.Nodes[0], cfg))
}

// acquireScript sets the lock if it is free (SET NX PX). If the key already
// holds our owner value, an earlier try whose reply we lost did succeed: we
// hold it. With ARGV[3] = "1" the grant also takes the next fencing token
// from KEYS[2] in the same atomic step, so token order is grant order.
var acquireScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] == '1' then return redis.call('INCR', KEYS[2]) end
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if ARGV[3] == '1' then return tonumber(redis.call('GET', KEYS[2])) end
  return 1
end
return 0`)

// releaseScript deletes the lock only if we still own it, so a client whose
// lease expired cannot delete the next holder's lock.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// setNX is the default acquire step: acquireScript, fenced or not. It
// returns 0 when refused, else 1 or the fencing token.
func setNX(ctx context.Context, rdb redis.UniversalClient, key, owner string, cfg lock.Config, fenced bool) (int64, error) {
	fence := "0"
	if fenced {
		fence = "1"
	}
	return acquireScript.Run(ctx, rdb, []string{key, key + ":token"}, owner, cfg.TTL.Milliseconds(), fence).Int64()
}

// plainSetNX is acquireScript's first step on its own, the same SET key
// owner NX PX ttl as a command: 1 when set, 0 when refused.
func plainSetNX(ctx context.Context, rdb redis.UniversalClient, key, owner string, cfg lock.Config) (int64, error) {
	err := rdb.Do(ctx, "SET", key, owner, "NX", "PX", cfg.TTL.Milliseconds()).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return 1, nil
}

// compareAndDelete is the default release step: 1 if our lock was deleted,
// 0 if it was no longer ours.
func compareAndDelete(ctx context.Context, rdb redis.UniversalClient, key, owner string) (int64, error) {
	return releaseScript.Run(ctx, rdb, []string{key}, owner).Int64()
}

// singleOpts are what tells apart the designs that keep one lock key on one
// Redis endpoint (a node, or the primary Sentinel names): the acquire and
// release steps, the sleep between tries, and replica acknowledgement.
type singleOpts struct {
	fenced bool
	// acquire returns 0 when refused, else 1 or the fencing token
	// (default setNX).
	acquire func(ctx context.Context, rdb redis.UniversalClient, key, owner string, cfg lock.Config, fenced bool) (int64, error)
	// release returns 1 when our lock was deleted, 0 when it was not ours
	// (default compareAndDelete).
	release func(ctx context.Context, rdb redis.UniversalClient, key, owner string) (int64, error)
	// owner, when set, is the value of every grant (source S1's per-process
	// client id); otherwise each acquire makes a fresh one.
	owner string
	// sleep, when set, is a fixed sleep between tries (source S1's spin)
	// instead of the configured randomized one.
	sleep time.Duration
	// waitReplicas > 0: a grant counts only once WAIT says that many
	// replicas have it; otherwise the lock is given back.
	waitReplicas int
}

// redisSingle is the classic single-endpoint Redis lock and the base of
// its variants.
type redisSingle struct {
	cfg lock.Config
	opt singleOpts
	rdb redis.UniversalClient
	rng *rand.Rand
	seq int
	// plainFirst: the acquire step is the unfenced setNX with a fresh
	// owner per acquire, whose script can find the key holding that owner
	// only after a try of unknown outcome of the same acquire set it. Until
	// such a try, a plain SET NX PX does all the script would (one command
	// either way), without running Lua on the server: 10-15% less of the
	// server's CPU per lock cycle.
	plainFirst bool
	*commandCount
}

func newRedisSingle(cfg lock.Config, rdb redis.UniversalClient, opt singleOpts) *redisSingle {
	cc := &commandCount{}
	rdb.AddHook(cc)
	plainFirst := opt.acquire == nil && !opt.fenced && opt.owner == ""
	if opt.acquire == nil {
		opt.acquire = setNX
	}
	if opt.release == nil {
		opt.release = compareAndDelete
	}
	if opt.sleep > 0 {
		cfg.RetryMin, cfg.RetryJitter = opt.sleep, 0
	}
	return &redisSingle{cfg: cfg, opt: opt, rdb: rdb, commandCount: cc, plainFirst: plainFirst,
		rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client)}
}

func (l *redisSingle) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	owner := l.opt.owner
	if owner == "" {
		l.seq++
		owner = fmt.Sprintf("c%d-%d-%x", l.cfg.Client, l.seq, l.rng.Uint32())
	}
	start := l.cfg.Clock.Now()
	uncertain := false // a try of this acquire had an unknown outcome
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		var n int64
		var err error
		if l.plainFirst && !uncertain {
			n, err = plainSetNX(ctx, l.rdb, key, owner, l.cfg)
		} else {
			n, err = l.opt.acquire(ctx, l.rdb, key, owner, l.cfg, l.opt.fenced)
		}
		switch {
		case clusterRefused(err):
			return lock.Grant{}, tryRefused, nil
		case err != nil:
			uncertain = true
			return lock.Grant{}, tryUnknown, err
		case n == 0:
			return lock.Grant{}, tryRefused, nil
		}
		if res, err := l.replicated(ctx, key, owner); res != tryGranted {
			uncertain = uncertain || res == tryUnknown
			return lock.Grant{}, res, err
		}
		g := lock.Grant{Owner: owner, Validity: l.cfg.TTL - l.cfg.Clock.Now().Sub(start)}
		if l.opt.fenced {
			g.Token = n
		}
		return g, tryGranted, nil
	})
}

// replicated waits, when asked to, until enough replicas acknowledged the
// grant (Redis WAIT). A grant they did not acknowledge is given back: a
// failover could lose it. WAIT narrows the window; it does not make
// replication synchronous, since Sentinel may still promote a replica that
// never received the write.
func (l *redisSingle) replicated(ctx context.Context, key, owner string) (tryResult, error) {
	if l.opt.waitReplicas == 0 {
		return tryGranted, nil
	}
	wait := min(l.cfg.IOTimeout/2, l.cfg.TTL/4)
	on, err := primaryOf(ctx, l.rdb, key)
	if err != nil {
		return tryUnknown, fmt.Errorf("wait for replicas: %w", err)
	}
	acked, err := on.Do(ctx, "WAIT", l.opt.waitReplicas, wait.Milliseconds()).Int64()
	if err != nil {
		return tryUnknown, fmt.Errorf("wait for replicas: %w", err)
	}
	if acked >= int64(l.opt.waitReplicas) {
		return tryGranted, nil
	}
	if _, err := l.opt.release(ctx, l.rdb, key, owner); err != nil {
		return tryUnknown, fmt.Errorf("give back a grant %d replicas acknowledged: %w", acked, err)
	}
	return tryRefused, nil
}

func (l *redisSingle) Release(ctx context.Context, key string, g lock.Grant) error {
	n, err := l.opt.release(ctx, l.rdb, key, g.Owner)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if n == 0 {
		return lock.ErrNotHeld
	}
	return nil
}

func (l *redisSingle) Close() error { return l.rdb.Close() }
