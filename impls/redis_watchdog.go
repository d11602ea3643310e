package impls

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Design{
		Name: "redis-watchdog",
		Description: "redis-single plus a Redisson-style watchdog (source S2): while held, the lease is renewed " +
			"every TTL/3, so critical sections may outlast the TTL",
		Binaries:   map[string]string{"redis-server": "redis-server"},
		Roles:      lockRoles(1),
		Deploy:     deployRedis(1),
		PlainNodes: true,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return &redisWatchdog{redisSingle: newRedisSingle(cfg, nodeClient(cfg), singleOpts{}),
				dogs: map[string]*watchdog{}}, nil
		},
	})
}

// renewScript extends the lease only if it is still ours.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)

// redisWatchdog renews the lease in the background while the lock is
// held. The renewal runs in the client's own process: a pause that stops
// the client stops its watchdog too, and the lease runs out.
type redisWatchdog struct {
	*redisSingle
	dogs map[string]*watchdog
}

type watchdog struct {
	stop chan struct{}
	done sync.WaitGroup
}

func (l *redisWatchdog) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	g, err := l.redisSingle.Acquire(ctx, key)
	if err != nil {
		return g, err
	}
	d := &watchdog{stop: make(chan struct{})}
	d.done.Go(func() { l.renew(key, g.Owner, d.stop) })
	l.dogs[key] = d
	return g, nil
}

// renew extends the lease every TTL/3 until stopped or the lease is found
// lost. Like Redisson, it tells nobody when renewal fails.
func (l *redisWatchdog) renew(key, owner string, stop <-chan struct{}) {
	t := time.NewTicker(l.cfg.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.IOTimeout)
		n, err := renewScript.Run(ctx, l.rdb, []string{key}, owner, l.cfg.TTL.Milliseconds()).Int64()
		cancel()
		if err == nil && n == 0 {
			return
		}
	}
}

func (l *redisWatchdog) Release(ctx context.Context, key string, g lock.Grant) error {
	if d, ok := l.dogs[key]; ok {
		close(d.stop)
		d.done.Wait()
		delete(l.dogs, key)
	}
	return l.redisSingle.Release(ctx, key, g)
}
