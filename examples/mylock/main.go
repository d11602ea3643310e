// Command mylock shows how to put your own Go lock under locktest without
// forking it: implement lock.Lock (and lock.Renewer if your lock renews
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
	"github.com/locktest/locktest/lock"
)

func main() {
	impls.Register(impls.Design{
		Name:        "example-redis",
		Description: "examples/mylock: a user's own Redis lock with renewal, registered from its own main",
		Renews:      true,
		Binaries:    map[string]string{"redis-server": "redis-server"},
		// Deploy starts the servers the clients will use; Config.Nodes gets
		// their addresses in this order.
		Deploy: func(ctx context.Context, c *cluster.Cluster, _ lock.Config) (impls.Deployment, error) {
			n, err := c.StartRedis(ctx, "redis-0", cluster.RedisOptions{})
			return impls.Deployment{Nodes: []*cluster.Node{n}}, err
		},
		// New runs in each worker process.
		New: func(cfg lock.Config) (lock.Lock, error) {
			return &myLock{cfg: cfg, rdb: redis.NewClient(&redis.Options{Addr: cfg.Nodes[0],
				ReadTimeout: cfg.IOTimeout, WriteTimeout: cfg.IOTimeout, MaxRetries: -1})}, nil
		},
	})
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

type myLock struct {
	cfg lock.Config
	rdb *redis.Client
	seq int
}

var (
	release = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	renew   = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
)

// Acquire tries until the deadline cfg.AcquireTimeout. The error contract
// is what makes the verdict right: lock.ErrNotAcquired (or any error
// wrapped with lock.Definite) says the lock was definitely not taken; any
// other error says it may have been, and is recorded as unknown.
func (l *myLock) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.AcquireTimeout)
	defer cancel()
	l.seq++
	owner := fmt.Sprintf("c%d-%d", l.cfg.Client, l.seq)
	var unknown error
	for {
		ok, err := l.rdb.SetNX(ctx, key, owner, l.cfg.TTL).Result()
		switch {
		case err == nil && ok:
			return lock.Grant{Owner: owner, Validity: l.cfg.TTL}, nil
		case err != nil:
			unknown = err // the SET may have landed before the reply was lost
		}
		select {
		case <-ctx.Done():
			if unknown != nil {
				return lock.Grant{}, fmt.Errorf("acquire: %w", unknown)
			}
			return lock.Grant{}, lock.ErrNotAcquired
		case <-time.After(l.cfg.RetryMin):
		}
	}
}

// Release reports lock.ErrNotHeld when the lock was no longer ours: the
// checker reads that as the lease having expired.
func (l *myLock) Release(ctx context.Context, key string, g lock.Grant) error {
	n, err := release.Run(ctx, l.rdb, []string{key}, g.Owner).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("release: %w", err)
	case n == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// Renew makes the lock a lock.Renewer, so workloads that renew can run.
func (l *myLock) Renew(ctx context.Context, key string, g lock.Grant) (lock.Grant, error) {
	n, err := renew.Run(ctx, l.rdb, []string{key}, g.Owner, l.cfg.TTL.Milliseconds()).Int64()
	switch {
	case err != nil:
		return g, fmt.Errorf("renew: %w", err)
	case n == 0:
		return g, lock.Definite(errors.New("renew: lock no longer held"))
	}
	g.Validity = l.cfg.TTL
	return g, nil
}

func (l *myLock) Close() error { return l.rdb.Close() }
