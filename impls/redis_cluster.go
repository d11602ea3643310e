package impls

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Design{
		Name: "redis-cluster",
		Description: "redis-single's lock on Redis Cluster: 3 primaries with a replica each, asynchronous " +
			"replication, failover voted over the cluster bus; go-redis's cluster client (source S1's deployment)",
		Roles:    clusterRoles,
		Binaries: map[string]string{"redis-server": "redis-server"},
		Deploy:   deployRedisCluster,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, clusterClient(cfg), singleOpts{}), nil
		},
	})
	Register(Design{
		Name: "redis-cluster-wait",
		Description: "redis-cluster, but a grant counts only after WAIT 1 on the key's primary says its " +
			"replica has it (else it is given back)",
		Roles:    clusterRoles,
		Binaries: map[string]string{"redis-server": "redis-server"},
		Deploy:   deployRedisCluster,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, clusterClient(cfg), singleOpts{waitReplicas: 1}), nil
		},
	})
	Register(Design{
		Name: "redis-cluster-reentrant",
		Description: "source S1's reentrant lock (redis-reentrant) on Redis Cluster, where S1's " +
			"RedisLockRegistry ran",
		Roles:    clusterRoles,
		Binaries: map[string]string{"redis-server": "redis-server"},
		Deploy:   deployRedisCluster,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisReentrant(cfg, clusterClient(cfg)), nil
		},
	})
}

// clusterShards is how many primaries (each with one replica) the
// cluster designs run.
const clusterShards = 3

var clusterRoles = func() []string {
	var roles []string
	for range clusterShards {
		roles = append(roles, cluster.RolePrimary)
	}
	for range clusterShards {
		roles = append(roles, cluster.RoleReplica)
	}
	return roles
}()

// deployRedisCluster starts the cluster. A node not heard from for 1 s is
// judged failing, as Sentinel's primary is in redis-replicated.
func deployRedisCluster(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error) {
	r, err := c.StartRedisCluster(ctx, cluster.RedisClusterOptions{Shards: clusterShards,
		NodeTimeout: time.Second, Persist: cfg.Persist})
	if err != nil {
		return Deployment{}, err
	}
	return Deployment{Nodes: r.Nodes}, nil
}

// clusterClient is go-redis's cluster client over the nodes in cfg.Nodes:
// it learns the slot map from them and then dials each primary at the
// address the cluster gives. It follows no redirect itself (a redirect
// loop would resend a command whose first try timed out); a MOVED makes it
// reload the map, and it reloads it every second anyway, as Redisson scans
// a cluster by default, so that clients find a promoted replica while the
// old primary still does not answer.
func clusterClient(cfg lock.Config) *redis.ClusterClient {
	o := redisOptions("", cfg)
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cfg.Nodes, Dialer: o.Dialer, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, MaxRetries: o.MaxRetries, MaxRedirects: -1, PoolSize: o.PoolSize,
		DisableIdentity: o.DisableIdentity, ClusterStateReloadInterval: time.Second,
	})
}

// clusterRefused reports whether a cluster node refused a command without
// running it: the key's slot is served elsewhere now (MOVED, ASK) or the
// cluster is down on the node's side (CLUSTERDOWN, TRYAGAIN). An acquire
// so refused had no effect and is tried again on the new map.
func clusterRefused(err error) bool {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return false
	}
	for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN "} {
		if strings.HasPrefix(rerr.Error(), p) {
			return true
		}
	}
	return false
}

// primaryOf is the client to send a keyless command about key to (WAIT):
// the key's primary on a cluster, where a cluster client would send it to
// any node; rdb itself elsewhere.
func primaryOf(ctx context.Context, rdb redis.UniversalClient, key string) (redis.UniversalClient, error) {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return rdb, nil
}
