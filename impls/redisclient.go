package impls

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
)

// commandCount is a go-redis hook that counts commands sent, the cost
// measure reports compare across designs.
type commandCount struct{ n atomic.Int64 }

func (c *commandCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *commandCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// Commands returns the number of commands sent so far.
func (c *commandCount) Commands() int64 { return c.n.Load() }

// redisOptions are the client options every Redis design uses: short I/O
// timeouts and no automatic retries, because a silent retry turns an
// unknown outcome into a second request the history never sees.
func redisOptions(addr string, cfg lock.Config) *redis.Options {
	return &redis.Options{
		Addr:            addr,
		DialTimeout:     cfg.IOTimeout,
		ReadTimeout:     cfg.IOTimeout,
		WriteTimeout:    cfg.IOTimeout,
		MaxRetries:      -1,
		PoolSize:        4,
		DisableIdentity: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: cfg.IOTimeout}
			return d.DialContext(ctx, network, addr)
		},
	}
}
