package impls

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Design{
		Name: "redis-replicated",
		Description: "redis-single on a primary with 2 replicas and 3 Sentinels; clients find the primary through " +
			"Sentinel, replication is asynchronous (sources S0–S2)",
		Roles:    sentinelRoles,
		Binaries: sentinelBinaries,
		Deploy:   deployReplicated,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, failoverClient(cfg), singleOpts{}), nil
		},
	})
	Register(Design{
		Name: "redis-replicated-wait",
		Description: "redis-replicated, but a grant counts only after WAIT 1 says a replica has it " +
			"(else it is given back), like Redisson's synced-slaves check",
		Roles:    sentinelRoles,
		Binaries: sentinelBinaries,
		Deploy:   deployReplicated,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, failoverClient(cfg), singleOpts{waitReplicas: 1}), nil
		},
	})
}

var sentinelBinaries = map[string]string{"redis-server": "redis-server", "redis-sentinel": "redis-sentinel"}

// sentinelRoles are the servers deployReplicated starts, in order.
var sentinelRoles = []string{cluster.RolePrimary, cluster.RoleReplica, cluster.RoleReplica,
	cluster.RoleSentinel, cluster.RoleSentinel, cluster.RoleSentinel}

// deployReplicated starts a primary, 2 replicas and 3 Sentinels (quorum 2).
// Sentinel's timings are small so that a failover completes in a few
// seconds: the primary is judged down after 1 s without a reply.
func deployReplicated(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error) {
	r, err := c.StartReplicated(ctx, cluster.ReplicatedOptions{Replicas: 2, Sentinels: 3, Quorum: 2,
		DownAfter: time.Second, FailoverTimeout: 2 * time.Second, Persist: cfg.Persist})
	if err != nil {
		return Deployment{}, err
	}
	return Deployment{Nodes: r.Sentinels}, nil
}

// failoverClient reaches the primary through the Sentinels in cfg.Nodes
// (go-redis FailoverClient): it asks them for the primary's address on
// every new connection and drops its connections when a Sentinel announces
// a new primary. The primary's address comes from Sentinel, so a client
// dials it directly, not through a per-client link.
func failoverClient(cfg lock.Config) *redis.Client {
	o := redisOptions("", cfg)
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: cluster.SentinelMaster, SentinelAddrs: cfg.Nodes, Dialer: o.Dialer,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		MaxRetries: o.MaxRetries, PoolSize: o.PoolSize, DisableIdentity: o.DisableIdentity,
	})
}
