package cluster

import (
	"context"
	"testing"
	"time"
)

// TestRedisClusterFailsOver starts a Redis Cluster of 3 shards, finds who
// serves a key, kills that primary, and sees the cluster promote its
// replica and answer again: what cluster-failover counts on, without the
// lab. About 12 s.
func TestRedisClusterFailsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real redis-servers; run without -short")
	}
	c := New(t.TempDir())
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, err := c.StartRedisCluster(ctx, RedisClusterOptions{Shards: 3, NodeTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := RedisClusterOf(c.Nodes()); got == nil || len(got.Nodes) != 6 {
		t.Fatalf("RedisClusterOf found %v, want the 6 nodes", got)
	}
	primary, replica, err := rc.Shard(ctx, "lock-0")
	if err != nil {
		t.Fatal(err)
	}
	if primary.Role() != RolePrimary || replica.Role() != RoleReplica {
		t.Fatalf("%s is %s and %s is %s, want primary and replica", primary.Name, primary.Role(), replica.Name, replica.Role())
	}
	if err := primary.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	for replica.Role() != RolePrimary {
		select {
		case <-ctx.Done():
			t.Fatalf("%s was never promoted after %s died", replica.Name, primary.Name)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if now, _, err := rc.Shard(ctx, "lock-0"); err == nil && now != replica {
		t.Fatalf("lock-0 served by %s after the failover, want %s", now.Name, replica.Name)
	}
}
