// Command mylock shows how to put your own Go lock under locktest without
// forking it: implement impls.Lock (and impls.Renewer if your lock renews
// leases), register the design, and hand over to cli.Main. The binary is
// then a complete locktest with your design in it; its workers are the same
// binary, so they have your design too.
//
//	go build -o mylock ./examples/mylock
//	./mylock run --impl example-redis --workload counter-renew --fault pause-holder
//
// The lock here is deliberately simple: SET NX PX to acquire, one try per
// retry interval until the deadline, compare-and-delete to release,
// compare-and-PEXPIRE to renew, and no fencing token. locktest finds its
// flaw: a holder paused past its lease loses an update (--workload counter).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cli"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
)

func main() {
	impls.Register(impls.Design{
		Name:        "example-redis",
		Description: "examples/mylock: a user's own Redis lock with renewal, registered from its own main",
		Renews:      true,
		Binaries:    map[string]string{"redis-server": "redis-server"},
		// Deploy starts the servers the clients will use; Config.Nodes gets
		// their addresses in this order.
		Deploy: func(ctx context.Context, c *cluster.Cluster, _ impls.Config) (impls.Deployment, error) {
			n, err := c.StartRedis(ctx, "redis-0", cluster.RedisOptions{})
			return impls.Deployment{Nodes: []*cluster.Node{n}}, err
		},
		// New runs in each worker process.
		New: func(cfg impls.Config) (impls.Lock, error) {
			return &lock{cfg: cfg, rdb: redis.NewClient(&redis.Options{Addr: cfg.Nodes[0],
				ReadTimeout: cfg.IOTimeout, WriteTimeout: cfg.IOTimeout, MaxRetries: -1})}, nil
		},
	})
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

type lock struct {
	cfg impls.Config
	rdb *redis.Client
	seq int
}

var (
	release = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	renew   = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
)

// Acquire tries until the deadline cfg.AcquireTimeout. The error contract
// is what makes the verdict right: impls.ErrNotAcquired (or any error
// wrapped with impls.Definite) says the lock was definitely not taken; any
// other error says it may have been, and is recorded as unknown.
func (l *lock) Acquire(ctx context.Context, key string) (impls.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.AcquireTimeout)
	defer cancel()
	l.seq++
	owner := fmt.Sprintf("c%d-%d", l.cfg.Client, l.seq)
	var unknown error
	for {
		ok, err := l.rdb.SetNX(ctx, key, owner, l.cfg.TTL).Result()
		switch {
		case err == nil && ok:
			return impls.Grant{Owner: owner, Validity: l.cfg.TTL}, nil
		case err != nil:
			unknown = err // the SET may have landed before the reply was lost
		}
		select {
		case <-ctx.Done():
			if unknown != nil {
				return impls.Grant{}, fmt.Errorf("acquire: %w", unknown)
			}
			return impls.Grant{}, impls.ErrNotAcquired
		case <-time.After(l.cfg.RetryMin):
		}
	}
}

// Release reports impls.ErrNotHeld when the lock was no longer ours: the
// checker reads that as the lease having expired.
func (l *lock) Release(ctx context.Context, key string, g impls.Grant) error {
	n, err := release.Run(ctx, l.rdb, []string{key}, g.Owner).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("release: %w", err)
	case n == 0:
		return impls.ErrNotHeld
	}
	return nil
}

// Renew makes the lock an impls.Renewer, so workloads that renew can run.
func (l *lock) Renew(ctx context.Context, key string, g impls.Grant) (impls.Grant, error) {
	n, err := renew.Run(ctx, l.rdb, []string{key}, g.Owner, l.cfg.TTL.Milliseconds()).Int64()
	switch {
	case err != nil:
		return g, fmt.Errorf("renew: %w", err)
	case n == 0:
		return g, impls.Definite(errors.New("renew: lock no longer held"))
	}
	g.Validity = l.cfg.TTL
	return g, nil
}

func (l *lock) Close() error { return l.rdb.Close() }
