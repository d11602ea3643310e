package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is Redis in cluster mode: shards of one primary and one
// replica each, replicated asynchronously, whose failover the nodes decide
// among themselves over the cluster bus (a majority of primaries votes for
// a replica of a primary they judge failed), not Sentinel. Clients follow
// the slot map, and MOVED replies when it changes.
type RedisCluster struct {
	// Nodes are redis-0 … redis-(S-1), the first primaries, then their
	// replicas: redis-(S+i) replicates redis-i. Which is primary now the
	// nodes say (Node.Role asks).
	Nodes []*Node
	bus   []int // the nodes' cluster bus ports, known to their starter only
}

// RedisClusterOptions shape a Redis Cluster.
type RedisClusterOptions struct {
	Shards int
	// NodeTimeout is cluster-node-timeout: how long a node may not answer
	// before it is judged failing, and how long a primary cut off from the
	// majority keeps taking writes.
	NodeTimeout time.Duration
	// Persist: every node keeps an AOF fsynced on every write.
	Persist bool
}

// redisClusterKind is the Node.Kind of a Redis Cluster's nodes.
const redisClusterKind = "redis-cluster"

// RedisClusterOf finds the Redis Cluster among a run's servers, or nil.
func RedisClusterOf(nodes []*Node) *RedisCluster {
	r := &RedisCluster{}
	for _, n := range nodes {
		if n.Kind == redisClusterKind {
			r.Nodes = append(r.Nodes, n)
		}
	}
	if len(r.Nodes) == 0 {
		return nil
	}
	return r
}

// StartRedisCluster starts 2×Shards nodes in cluster mode, gives each
// first node an equal range of the slots, joins them and makes each other
// node the replica of one, and waits until every node sees the same
// healthy cluster.
//
// A replica is promoted however stale its data (validity factor 0), as a
// managed cluster's are; otherwise a replica that lost touch with its
// primary before the primary failed would leave its slots down instead of
// losing writes. In a lab every node also has a link "peers:NAME" on which
// all other servers reach it (replication and the bus), so a fault can cut
// a node off from the cluster while its clients still reach it. On the
// proxy's network nodes dial each other at the addresses they gossip,
// which no proxy can stand between.
func (c *Cluster) StartRedisCluster(ctx context.Context, opt RedisClusterOptions) (*RedisCluster, error) {
	r := &RedisCluster{}
	for i := range 2 * opt.Shards {
		name := fmt.Sprintf("redis-%d", i)
		bus, err := FreePort()
		r.bus = append(r.bus, bus)
		if err != nil {
			return nil, err
		}
		role := RolePrimary
		if i >= opt.Shards {
			role = RoleReplica
		}
		n, err := c.StartRedis(ctx, name, RedisOptions{AOFAlways: opt.Persist, Role: role,
			kind: redisClusterKind, roleOf: redisRole, Config: []string{
				"cluster-enabled yes",
				"cluster-config-file nodes.conf",
				fmt.Sprintf("cluster-port %d", bus),
				fmt.Sprintf("cluster-node-timeout %d", opt.NodeTimeout.Milliseconds()),
				"cluster-replica-validity-factor 0",
				"cluster-require-full-coverage no",
				"shutdown-timeout 0",
				"repl-diskless-sync-delay 0",
			}})
		if err != nil {
			return nil, err
		}
		if c.kernel != nil {
			if _, err := c.Link(LinkName(PeersEnd, name), n.Addr()); err != nil {
				return nil, err
			}
		}
		r.Nodes = append(r.Nodes, n)
	}
	if err := r.join(ctx, opt.Shards); err != nil {
		return nil, err
	}
	return r, nil
}

// join assigns slots, introduces the nodes, pairs replicas with primaries
// and waits for the cluster to settle.
func (r *RedisCluster) join(ctx context.Context, shards int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ids := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		rc := nodeClient(n)
		id, err := rc.ClusterMyID(ctx).Result()
		if err == nil && i < shards {
			err = rc.ClusterAddSlotsRange(ctx, i*16384/shards, (i+1)*16384/shards-1).Err()
		}
		if err == nil {
			// Distinct epochs settle the first slot claims at once.
			err = rc.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		}
		rc.Close()
		if err != nil {
			return fmt.Errorf("redis cluster: set up %s: %w", n.Name, err)
		}
		ids[i] = id
	}
	first := nodeClient(r.Nodes[0])
	defer first.Close()
	for i, n := range r.Nodes[1:] {
		if err := first.Do(ctx, "CLUSTER", "MEET", n.Host(), n.Port, r.bus[i+1]).Err(); err != nil {
			return fmt.Errorf("redis cluster: meet %s: %w", n.Name, err)
		}
	}
	if err := r.waitAll(ctx, func(ctx context.Context, rc *redis.Client) error {
		nodes, err := rc.ClusterNodes(ctx).Result()
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(nodes), "\n")
		if len(lines) != len(r.Nodes) || strings.Contains(nodes, "handshake") || strings.Contains(nodes, "noaddr") {
			return fmt.Errorf("knows %d of %d nodes", len(lines), len(r.Nodes))
		}
		return nil
	}); err != nil {
		return err
	}
	for i, n := range r.Nodes[shards:] {
		rc := nodeClient(n)
		err := rc.ClusterReplicate(ctx, ids[i]).Err()
		rc.Close()
		if err != nil {
			return fmt.Errorf("redis cluster: make %s a replica of %s: %w", n.Name, r.Nodes[i].Name, err)
		}
	}
	return r.WaitSettled(ctx)
}

// WaitSettled waits until every node is up, says the cluster is ok, and
// sees every shard with a primary and a connected replica: a failover
// could promote nobody before, and a node that just rejoined still
// resyncs.
func (r *RedisCluster) WaitSettled(ctx context.Context) error {
	return r.waitAll(ctx, func(ctx context.Context, rc *redis.Client) error {
		info, err := rc.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return errors.New("cluster_state is not ok")
		}
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err != nil {
			return err
		}
		if len(role) >= 4 && role[0] == "slave" && role[3] != "connected" {
			return fmt.Errorf("replica not connected to its primary: %v", role)
		}
		if len(role) >= 3 && role[0] == "master" {
			if replicas, _ := role[2].([]any); len(replicas) == 0 {
				return errors.New("primary has no replica")
			}
		}
		// The node's map, as gossip made it, pairs every shard too.
		slots, err := rc.ClusterSlots(ctx).Result()
		if err != nil {
			return err
		}
		for _, s := range slots {
			if len(s.Nodes) < 2 {
				return fmt.Errorf("sees slots %d-%d served with no replica", s.Start, s.End)
			}
		}
		return nil
	})
}

// waitAll waits until check passes on every node at once.
func (r *RedisCluster) waitAll(ctx context.Context, check func(context.Context, *redis.Client) error) error {
	var last error
	for {
		last = nil
		for _, n := range r.Nodes {
			rc := nodeClient(n)
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := check(cctx, rc)
			cancel()
			rc.Close()
			if err != nil {
				last = fmt.Errorf("%s: %w", n.Name, err)
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis cluster did not settle: %w", errors.Join(ctx.Err(), last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Shard returns the primary that serves key now and its replica, as the
// majority of the cluster sees it: the first node that answers CLUSTER
// SLOTS and is not cut off says.
func (r *RedisCluster) Shard(ctx context.Context, key string) (primary, replica *Node, err error) {
	for _, n := range r.Nodes {
		rc := nodeClient(n)
		primary, replica, err = r.shardSeenBy(ctx, rc, key)
		rc.Close()
		if err == nil {
			return primary, replica, nil
		}
	}
	return nil, nil, fmt.Errorf("redis cluster: who serves %q: %w", key, err)
}

func (r *RedisCluster) shardSeenBy(ctx context.Context, rc *redis.Client, key string) (primary, replica *Node, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if info, err := rc.ClusterInfo(ctx).Result(); err != nil || !strings.Contains(info, "cluster_state:ok") {
		return nil, nil, errors.Join(err, errors.New("cluster not ok on this node"))
	}
	slot, err := rc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return nil, nil, err
	}
	slots, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, nil, err
	}
	for _, s := range slots {
		if int64(s.Start) > slot || int64(s.End) < slot || len(s.Nodes) < 2 {
			continue
		}
		primary, replica = r.at(s.Nodes[0].Addr), r.at(s.Nodes[1].Addr)
		if primary == nil || replica == nil {
			return nil, nil, fmt.Errorf("slot %d served by %s, not a node of this run", slot, s.Nodes[0].Addr)
		}
		return primary, replica, nil
	}
	return nil, nil, fmt.Errorf("slot %d has no primary with a replica: %v", slot, slots)
}

// at is the node listening at addr.
func (r *RedisCluster) at(addr string) *Node {
	for _, n := range r.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// redisRole asks the node what it is now (ROLE), keeping what it last said
// while it does not answer (paused, cut off, restarting).
func redisRole(n *Node) string {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	rc := nodeClient(n)
	defer rc.Close()
	role, err := rc.Do(ctx, "ROLE").Slice()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err == nil && len(role) > 0 {
		n.role = RoleReplica
		if role[0] == "master" {
			n.role = RolePrimary
		}
	}
	return n.role
}

// nodeClient talks to one node directly, without following redirects.
func nodeClient(n *Node) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: net.JoinHostPort(n.Host(), strconv.Itoa(n.Port)),
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		DisableIdentity: true, PoolSize: 1})
}
