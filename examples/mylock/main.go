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
// compare-and-PEXPIRE to renew. example-redis hands out no fencing token,
// and locktest finds its flaw: a holder paused past its lease loses an
// update (--workload counter). example-redis-fenced takes a token from INCR
// in the same script as the SET, and the protected data stays safe under
// the same fault. mylock_test.go asserts both from go test, through the
// locktesting package.
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

// The designs are values, so that main registers them and the test hands
// the same ones to locktesting.Main.
var (
	unfenced = newDesign("example-redis", false)
	fenced   = newDesign("example-redis-fenced", true)
)

func main() {
	impls.Register(unfenced)
	impls.Register(fenced)
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

func newDesign(name string, fenced bool) impls.Design {
	return impls.Design{
		Name:        name,
		Description: "examples/mylock: a user's own Redis lock with renewal, registered from its own main",
		Fenced:      fenced,
		Renews:      true,
		Binaries:    map[string]string{"redis-server": "redis-server"},
		Roles:       []string{cluster.RoleLock},
		// Deploy starts the servers the clients will use; Config.Nodes gets
		// their addresses in this order.
		Deploy: func(ctx context.Context, c *cluster.Cluster, _ lock.Config) (impls.Deployment, error) {
			n, err := c.StartRedis(ctx, "redis-0", cluster.RedisOptions{})
			return impls.Deployment{Nodes: []*cluster.Node{n}}, err
		},
		// New runs in each worker process.
		New: func(cfg lock.Config) (lock.Lock, error) {
			return &myLock{cfg: cfg, fenced: fenced, rdb: redis.NewClient(&redis.Options{Addr: cfg.Nodes[0],
				ReadTimeout: cfg.IOTimeout, WriteTimeout: cfg.IOTimeout, MaxRetries: -1})}, nil
		},
	}
}

type myLock struct {
	cfg    lock.Config
	fenced bool
	rdb    *redis.Client
	seq    int
}

var (
	// acquire sets the lock if it is free and returns 0 if it is not. With
	// ARGV[3] = 1 it also takes the key's next fencing token in the same
	// atomic step, so that token order is grant order; else it returns 1.
	acquire = redis.NewScript(`if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
if ARGV[3] == '1' then return redis.call('INCR', KEYS[2]) end return 1`)
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
	fence := 0
	if l.fenced {
		fence = 1
	}
	var unknown error
	for {
		n, err := acquire.Run(ctx, l.rdb, []string{key, key + ":token"}, owner, l.cfg.TTL.Milliseconds(), fence).Int64()
		switch {
		case err == nil && n > 0:
			g := lock.Grant{Owner: owner, Validity: l.cfg.TTL}
			if l.fenced {
				g.Token = n // the resource refuses writes older than the newest token it saw
			}
			return g, nil
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
