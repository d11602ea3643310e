package faults_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
)

// TestPartitionReplication builds what a replicated design's Deploy does:
// a replica that reaches its primary through a link. Aimed at
// primary/peers, a partition stops replication and spares the clients;
// aimed at primary/clients, the reverse.
func TestPartitionReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real redis-servers, a primary and its replica; run without -short")
	}
	ctx := context.Background()
	c := cluster.New(t.TempDir())
	t.Cleanup(func() { c.Stop() })
	primary, err := c.StartRedis(ctx, "redis-0", cluster.RedisOptions{Role: cluster.RolePrimary})
	if err != nil {
		t.Fatal(err)
	}
	repl, err := c.Link(cluster.LinkName("redis-1", "redis-0"), primary.Addr())
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(repl.Addr(), ":")
	replica, err := c.StartRedis(ctx, "redis-1", cluster.RedisOptions{Role: cluster.RoleReplica, ReplicaOf: host + " " + port})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*cluster.Node{primary, replica} {
		if _, err := c.Link(cluster.LinkName("c0", n.Name), n.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	p, r := client(primary.Addr()), client(replica.Addr())
	defer p.Close()
	defer r.Close()
	replicated := func(key string, within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if err := r.Get(ctx, key).Err(); err == nil {
				return true
			} else if !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
		}
		return false
	}
	if err := p.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !replicated("before", 10*time.Second) {
		t.Fatal("replica never synced through its link")
	}

	for _, tc := range []struct {
		target             string
		replCut, clientCut bool
	}{
		{"primary/peers", true, false},
		{"primary/clients", false, true},
	} {
		t.Run(tc.target, func(t *testing.T) {
			b := &bench{c: c, nodes: []*cluster.Node{primary, replica}, started: make(chan string, 4), stopped: make(chan string, 4)}
			b.env = &faults.Env{Rand: rand.New(rand.NewPCG(1, 2)), Interval: 100 * time.Millisecond, Duration: 1500 * time.Millisecond,
				Clients: newProcClients(t, 1), Nodes: b.nodes, Links: c.Links(), Log: slog.Default(),
				Started: func(s faults.Strike) { b.started <- s.Target }, Stopped: func(_, target string, _ time.Duration) { b.stopped <- target }}
			hit, stop := b.run(t, "partition", tc.target)
			defer stop()
			if want := strings.Replace(tc.target, "primary", "redis-0", 1); hit != want {
				t.Fatalf("hit %q, want %q", hit, want)
			}
			key := "during-" + tc.target
			if err := p.Set(ctx, key, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got := replicated(key, 500*time.Millisecond); got == tc.replCut {
				t.Fatalf("replicated during the partition: %v, want %v", got, !tc.replCut)
			}
			if _, err := rtt(b.link(t, "c0:redis-0").Addr(), 400*time.Millisecond); (err != nil) != tc.clientCut {
				t.Fatalf("client link to the primary: %v, cut want %v", err, tc.clientCut)
			}
			if _, err := rtt(b.link(t, "c0:redis-1").Addr(), 400*time.Millisecond); err != nil {
				t.Fatalf("the replica's client link was not aimed at: %v", err)
			}
			b.waitStopped(t)
			if !replicated(key, 10*time.Second) {
				t.Fatal("replication did not resume after the partition")
			}
			stop()
			for _, l := range c.Links() {
				if tx := l.Toxics(); len(tx) > 0 {
					t.Fatalf("link %s still has %v", l.Name, tx)
				}
			}
		})
	}
}
