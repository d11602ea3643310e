package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisTimeouts: a lock node runs with the run's timeouts, as CONFIG
// GET reports them, and the resource node, the checker's, keeps Redis's
// defaults (0 and 300). About 0.1 s.
func TestRedisTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real redis-servers; run without -short")
	}
	c := New(t.TempDir())
	defer c.Stop()
	c.SetTimeouts(testTimeouts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lock, err := c.StartRedis(ctx, "redis-0", RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resource, err := c.StartRedis(ctx, RoleResource, RedisOptions{Role: RoleResource})
	if err != nil {
		t.Fatal(err)
	}
	defaults := []Knob{{"tcp-keepalive", "300"}, {"timeout", "0"}}
	for _, tc := range []struct {
		n    *Node
		want []Knob
	}{{lock, TimeoutKnobs("redis-server", testTimeouts)}, {resource, defaults}} {
		rdb := redis.NewClient(&redis.Options{Addr: tc.n.Addr()})
		defer rdb.Close()
		for _, k := range tc.want {
			got, err := rdb.ConfigGet(ctx, k.Name).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got[k.Name] != k.Value {
				t.Errorf("%s: %s = %q, want %s", tc.n.Name, k.Name, got[k.Name], k.Value)
			}
		}
	}
}
