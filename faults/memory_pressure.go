package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

func init() { Register(memoryPressure{}) }

// memoryPressure fills Redis lock servers to a memory limit for the fault
// duration, as other tenants of a shared cache do. What a full server drops
// is its maxmemory-policy (--eviction): noeviction refuses the writes, so
// acquires fail and the lock stays safe; an eviction policy may drop a held
// lock's key, and the next client is granted it while the holder still
// works — two holders with no crash, pause or partition.
type memoryPressure struct{}

// Headroom is the memory a strike lets a server use above what it used
// before, and the fillers write several times that, so that an evicting
// server evicts over and over and samples every key, the lock's too.
const (
	pressureHeadroom = 4 << 20
	pressureFill     = 4 * pressureHeadroom
	pressureValue    = 32 << 10
	pressurePrefix   = "locktest-memory-pressure:"
)

func (memoryPressure) Name() string { return "memory-pressure" }
func (memoryPressure) Description() string {
	return "fill Redis lock servers past a memory limit for the fault duration; what they drop is --eviction's policy (redis designs only)"
}

func (memoryPressure) Traits() Traits {
	return Traits{Aim: history.AimServers, Targets: NodeTargets, Target: "node",
		Warn: func(c scenario.Config, _ Target) []string {
			if c.Eviction == "" || c.Eviction == "noeviction" {
				return []string{"memory-pressure under noeviction: a full server refuses writes and evicts nothing, so the lock cannot lose its key (the control; --eviction allkeys-lru for a cache that evicts)"}
			}
			return nil
		}}
}

func (f memoryPressure) Applies(d impls.Design, _ Workload) error {
	if _, ok := d.Binaries["redis-server"]; !ok {
		return fmt.Errorf("%s fills Redis servers, and %s runs none", f.Name(), d.Name)
	}
	return nil
}

func (f memoryPressure) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(ctx context.Context) (hit, error) {
		var redis []*cluster.Node // not a design's Sentinels or database
		for _, n := range env.Nodes {
			if n.Kind == "redis" {
				redis = append(redis, n)
			}
		}
		nodes := env.pickAmong(redis)
		if len(nodes) == 0 {
			return hit{}, errors.New("no Redis server among the targets")
		}
		heals := make(map[*cluster.Node]func() error)
		heal, err := onAll(nodes, func(n *cluster.Node) error {
			h, err := fillMemory(ctx, n)
			heals[n] = h
			return err
		}, func(n *cluster.Node) error { return heals[n]() })
		if err != nil {
			return hit{}, err
		}
		return hit{target: nodeNames(nodes), heal: heal}, nil
	})
}

// fillMemory caps n's memory a little above what it uses and writes
// fillers past the cap; it returns what lifts the cap and deletes them,
// which it has already done when it fails.
func fillMemory(ctx context.Context, n *cluster.Node) (func() error, error) {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	heal := func() error {
		// The run may be ending: its own deadline, not ctx.
		hctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		defer c.Close()
		err := c.ConfigSet(hctx, "maxmemory", "0").Err()
		iter := c.Scan(hctx, 0, pressurePrefix+"*", 256).Iterator()
		var keys []string
		for iter.Next(hctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			err = errors.Join(err, c.Unlink(hctx, keys...).Err())
		}
		if err = errors.Join(err, iter.Err()); err != nil {
			return fmt.Errorf("lift the memory pressure on %s: %w", n.Name, err)
		}
		return nil
	}
	used, err := usedMemory(ctx, c)
	if err == nil {
		err = c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+pressureHeadroom, 10)).Err()
	}
	value := strings.Repeat("x", pressureValue)
	for i := 0; err == nil && i < pressureFill/pressureValue; i++ {
		err = c.Set(ctx, pressurePrefix+strconv.Itoa(i), value, 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "OOM") {
			err = nil // noeviction: the server is full and refuses writes
			break
		}
	}
	if err != nil {
		return heal, errors.Join(fmt.Errorf("fill %s: %w", n.Name, err), heal())
	}
	return heal, nil
}

// usedMemory is INFO memory's used_memory, in bytes.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO memory has no used_memory")
}
