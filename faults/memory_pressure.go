package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
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

// memoryPressure fills Redis or memcached lock servers to a memory limit
// for the fault duration, as other tenants of a shared cache do. What a
// full Redis drops is its maxmemory-policy (--eviction): noeviction refuses
// the writes, so acquires fail and the lock stays safe; an eviction policy
// may drop a held lock's key, and the next client is granted it while the
// holder still works — two holders with no crash, pause or partition.
// memcached always evicts.
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
	return "fill Redis or memcached lock servers past a memory limit for the fault duration; what Redis drops is --eviction's policy, memcached evicts"
}

func (memoryPressure) Traits() Traits {
	return Traits{Aim: history.AimServers, Targets: NodeTargets, Target: "node",
		Warn: func(c scenario.Config, _ Target) []string {
			if d, err := impls.Lookup(c.Impl); err == nil && d.Binaries["memcached"] != "" {
				return nil // a cache that always evicts
			}
			if c.Eviction == "" || c.Eviction == "noeviction" {
				return []string{"memory-pressure under noeviction: a full server refuses writes and evicts nothing, so the lock cannot lose its key (the control; --eviction allkeys-lru for a cache that evicts)"}
			}
			return nil
		}}
}

func (f memoryPressure) Applies(d impls.Design, _ Workload) error {
	_, redis := d.Binaries["redis-server"]
	if _, memcached := d.Binaries["memcached"]; !redis && !memcached {
		return fmt.Errorf("%s fills Redis or memcached servers, and %s runs neither", f.Name(), d.Name)
	}
	if redisCluster(d) {
		return fmt.Errorf("%s fills a Redis server with keys of its own, which a Redis Cluster node takes only for its slots", f.Name())
	}
	return nil
}

func (f memoryPressure) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(ctx context.Context) (hit, error) {
		var stores []*cluster.Node // not a design's Sentinels or database
		for _, n := range env.Nodes {
			if n.Kind == "redis" || n.Kind == "memcached" {
				stores = append(stores, n)
			}
		}
		nodes := env.pickAmong(stores)
		if len(nodes) == 0 {
			return hit{}, errors.New("no Redis or memcached server among the targets")
		}
		// Filled at once (onAll): each node's heal in its own place.
		heals := make([]func() error, len(nodes))
		index := func(n *cluster.Node) int { return slices.Index(nodes, n) }
		heal, err := onAll(nodes, func(n *cluster.Node) error {
			fill := fillMemory
			if n.Kind == "memcached" {
				fill = fillMemcached
			}
			h, err := fill(ctx, n)
			heals[index(n)] = h
			return err
		}, func(n *cluster.Node) error { return heals[index(n)]() })
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

// memcached's fillers: its smallest memory limit, and items of the sizes a
// lock's item has (each size class evicts on its own), written until each
// class has turned over its share of that limit several times.
const (
	memcachedLimitMB = 8 // cache_memlimit refuses less
	memcachedFillers = 60000
)

var memcachedFillerSizes = []int{1, 24, 48, 72, 96, 128}

// fillMemcached lowers n's memory limit to memcached's smallest and writes
// fillers past it; it returns what restores the limit and deletes them,
// which it has already done when it fails.
func fillMemcached(ctx context.Context, n *cluster.Node) (func() error, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", n.Addr())
	if err != nil {
		return func() error { return nil }, fmt.Errorf("fill %s: %w", n.Name, err)
	}
	r := bufio.NewReader(conn)
	ask := func(cmd string) (string, error) {
		if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			return "", err
		}
		if cmd != "" { // "": the next line of a longer reply
			if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
				return "", err
			}
		}
		line, err := r.ReadString('\n')
		return strings.TrimSpace(line), err
	}
	// Many writes, one reply: noreply, then a version to wait on.
	each := func(cmd func(i int) string) error {
		w := bufio.NewWriterSize(conn, 64<<10)
		if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
			return err
		}
		for i := range memcachedFillers * len(memcachedFillerSizes) {
			if _, err := w.WriteString(cmd(i) + "\r\n"); err != nil {
				return err
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		v, err := ask("version")
		if err == nil && !strings.HasPrefix(v, "VERSION") {
			err = fmt.Errorf("after the fillers, version answered %q", v)
		}
		return err
	}
	key := func(i int) string { return pressurePrefix + strconv.Itoa(i) }
	limit := 64
	if stats, err := memcachedStat(ask, "settings", "maxbytes"); err == nil {
		limit = int(stats >> 20)
	}
	heal := func() error {
		defer conn.Close()
		v, err := ask("cache_memlimit " + strconv.Itoa(limit))
		if err == nil && v != "OK" {
			err = fmt.Errorf("cache_memlimit answered %q", v)
		}
		err = errors.Join(err, each(func(i int) string { return "delete " + key(i) + " noreply" }))
		if err != nil {
			return fmt.Errorf("lift the memory pressure on %s: %w", n.Name, err)
		}
		return nil
	}
	v, err := ask("cache_memlimit " + strconv.Itoa(memcachedLimitMB))
	if err == nil && v != "OK" {
		err = fmt.Errorf("cache_memlimit answered %q", v)
	}
	if err == nil {
		err = each(func(i int) string {
			size := memcachedFillerSizes[i%len(memcachedFillerSizes)]
			return fmt.Sprintf("set %s 0 0 %d noreply\r\n%s", key(i), size, strings.Repeat("x", size))
		})
	}
	if err != nil {
		return heal, errors.Join(fmt.Errorf("fill %s: %w", n.Name, err), heal())
	}
	return heal, nil
}

// memcachedStat reads one number of stats group ("" for the general ones).
func memcachedStat(ask func(string) (string, error), group, name string) (int64, error) {
	line, err := ask(strings.TrimSpace("stats " + group))
	var value int64 = -1
	for ; err == nil && line != "END"; line, err = ask("") {
		if v, ok := strings.CutPrefix(line, "STAT "+name+" "); ok {
			value, err = strconv.ParseInt(v, 10, 64)
		}
	}
	if err == nil && value < 0 {
		err = fmt.Errorf("stats %s has no %s", group, name)
	}
	return value, err
}
