package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the Sentinels monitor the primary under.
const SentinelMaster = "locktest"

// ReplicatedOptions shape a Sentinel deployment.
type ReplicatedOptions struct {
	Replicas  int
	Sentinels int
	// Quorum is how many Sentinels must agree the primary is down.
	Quorum int
	// DownAfter and FailoverTimeout are Sentinel's down-after-milliseconds
	// and failover-timeout: small, so a failover completes in seconds.
	DownAfter       time.Duration
	FailoverTimeout time.Duration
	// Persist: data nodes keep an AOF fsynced on every write.
	Persist bool
}

// Replicated is a Redis primary with replicas, watched by Sentinel
// processes that promote a replica when the primary fails. Replication is
// asynchronous, which is the point: a write the primary acknowledged can
// vanish in a failover. Node roles (RolePrimary, RoleReplica) follow what
// the Sentinels say, so faults aimed at "primary" hit the current one.
type Replicated struct {
	// Data holds the redis-server nodes, the initial primary first. Which
	// one is primary now only the Sentinels know: ask Primary.
	Data      []*Node
	Sentinels []*Node
}

// ReplicatedOf finds the Sentinel deployment among a run's servers, or
// returns nil if there is none.
func ReplicatedOf(nodes []*Node) *Replicated {
	r := &Replicated{}
	for _, n := range nodes {
		switch {
		case n.Kind == "sentinel":
			r.Sentinels = append(r.Sentinels, n)
		case n.Kind == "redis" && (n.Role() == RolePrimary || n.Role() == RoleReplica):
			r.Data = append(r.Data, n)
		}
	}
	if len(r.Sentinels) == 0 || len(r.Data) == 0 {
		return nil
	}
	return r
}

// SentinelBinary checks that redis-sentinel is installed.
func SentinelBinary() (string, error) { return LookBinary("redis-sentinel", "redis-sentinel") }

// StartReplicated starts a primary, its replicas and the Sentinels, and
// waits until every Sentinel knows every replica and every other Sentinel:
// before that a failover could not promote anyone.
func (c *Cluster) StartReplicated(ctx context.Context, opt ReplicatedOptions) (*Replicated, error) {
	r := &Replicated{}
	// At teardown a primary would wait up to 10 s for lagging replicas, and
	// a full resync after a failover would wait 5 s for more replicas.
	conf := []string{"shutdown-timeout 0", "repl-diskless-sync-delay 0"}
	primary, err := c.StartRedis(ctx, "redis-0", RedisOptions{Config: conf, Role: RolePrimary, AOFAlways: opt.Persist})
	if err != nil {
		return nil, err
	}
	r.Data = append(r.Data, primary)
	for i := 1; i <= opt.Replicas; i++ {
		n, err := c.StartRedis(ctx, fmt.Sprintf("redis-%d", i), RedisOptions{ReplicaOf: fmt.Sprintf("%s %d", primary.Host(), primary.Port),
			Config: conf, Role: RoleReplica, AOFAlways: opt.Persist})
		if err != nil {
			return nil, err
		}
		r.Data = append(r.Data, n)
	}
	for i := range opt.Sentinels {
		n, err := c.startSentinel(ctx, fmt.Sprintf("sentinel-%d", i), primary, opt)
		if err != nil {
			return nil, err
		}
		r.Sentinels = append(r.Sentinels, n)
	}
	if err := r.waitSettled(ctx, opt); err != nil {
		return nil, err
	}
	go r.followRoles()
	return r, nil
}

// followRoles keeps the data nodes' roles in step with the primary the
// Sentinels name, whoever caused the failover, until the Sentinels stop.
func (r *Replicated) followRoles() {
	for {
		time.Sleep(200 * time.Millisecond)
		if !anyRunning(r.Sentinels) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if p, err := r.Primary(ctx); err == nil {
			r.setRoles(p)
		}
		cancel()
	}
}

// setRoles marks primary as the primary and every other data node a replica.
func (r *Replicated) setRoles(primary *Node) {
	for _, n := range r.Data {
		if n == primary {
			n.SetRole(RolePrimary)
		} else {
			n.SetRole(RoleReplica)
		}
	}
}

// startSentinel starts one redis-sentinel monitoring primary. Sentinel
// rewrites its config file, so each gets its own in its directory.
func (c *Cluster) startSentinel(ctx context.Context, name string, primary *Node, opt ReplicatedOptions) (*Node, error) {
	bin, err := SentinelBinary()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, Kind: "sentinel", Port: port, ready: pingRedis, role: RoleSentinel}
	dir := filepath.Join(c.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	conf := []string{
		"bind " + c.backend.BindHost(),
		fmt.Sprintf("port %d", port),
		"protected-mode no",
		"daemonize no",
		"dir " + dir,
		"logfile \"\"",
		fmt.Sprintf("sentinel monitor %s %s %d %d", SentinelMaster, primary.Host(), primary.Port, opt.Quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, opt.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, opt.FailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s %d", SentinelMaster, max(1, opt.Replicas)),
	}
	confPath := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", confPath, err)
	}
	n.spec = Spec{Path: bin, Args: []string{confPath}}
	if err := c.add(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// waitSettled waits until each Sentinel sees all replicas and all other
// Sentinels (Sentinels find each other through hello messages every 2 s).
func (r *Replicated) waitSettled(ctx context.Context, opt ReplicatedOptions) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range r.Sentinels {
		var last error
		for {
			last = sentinelSees(ctx, s, opt)
			if last == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s did not settle (see %s): %w", s.Name, filepath.Join(s.Dir, s.Name+".log"), errors.Join(ctx.Err(), last))
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func sentinelSees(ctx context.Context, s *Node, opt ReplicatedOptions) error {
	sc := sentinelClient(s)
	defer sc.Close()
	m, err := sc.Master(ctx, SentinelMaster).Result()
	if err != nil {
		return err
	}
	if m["num-slaves"] != strconv.Itoa(opt.Replicas) || m["num-other-sentinels"] != strconv.Itoa(opt.Sentinels-1) {
		return fmt.Errorf("sees %s replicas and %s other sentinels", m["num-slaves"], m["num-other-sentinels"])
	}
	return nil
}

func sentinelClient(s *Node) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, DisableIdentity: true})
}

// Addrs returns the Sentinels' addresses, which clients dial first.
func (r *Replicated) Addrs() []string {
	var out []string
	for _, s := range r.Sentinels {
		out = append(out, s.Addr())
	}
	return out
}

// Primary returns the node the first answering Sentinel names as primary.
func (r *Replicated) Primary(ctx context.Context) (*Node, error) {
	var errs []error
	for _, s := range r.Sentinels {
		n, err := r.primaryOf(ctx, s)
		if err == nil {
			return n, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no sentinel named the primary: %w", errors.Join(errs...))
}

func (r *Replicated) primaryOf(ctx context.Context, s *Node) (*Node, error) {
	sc := sentinelClient(s)
	defer sc.Close()
	addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if len(addr) != 2 {
		return nil, fmt.Errorf("%s: primary address %v", s.Name, addr)
	}
	for _, n := range r.Data {
		if n.Addr() == net.JoinHostPort(addr[0], addr[1]) {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%s names %v, which is no node of ours", s.Name, addr)
}

// Failover asks a Sentinel to promote a replica now, as if the primary had
// failed, while the primary keeps running: Sentinel's own failover, which
// loses whatever the promoted replica had not yet received.
func (r *Replicated) Failover(ctx context.Context) error {
	var errs []error
	for _, s := range r.Sentinels {
		sc := sentinelClient(s)
		err := sc.Failover(ctx, SentinelMaster).Err()
		sc.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
	}
	return fmt.Errorf("sentinel failover: %w", errors.Join(errs...))
}

// WaitNewPrimary waits until every Sentinel names a primary other than old
// and they agree: from then on clients that ask are sent to it.
func (r *Replicated) WaitNewPrimary(ctx context.Context, old *Node) (*Node, error) {
	for {
		var agreed *Node
		ok := true
		for _, s := range r.Sentinels {
			n, err := r.primaryOf(ctx, s)
			if err != nil || n == old || (agreed != nil && n != agreed) {
				ok = false
				break
			}
			agreed = n
		}
		if ok && agreed != nil {
			r.setRoles(agreed)
			return agreed, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for sentinels to promote a replica: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// role asks a node for its replication role: "master", or "slave" with
// the primary's port and whether the link to it is up.
func role(ctx context.Context, n *Node) (kind string, primaryPort int64, linked bool, err error) {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second,
		MaxRetries: -1, DisableIdentity: true})
	defer c.Close()
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return "", 0, false, fmt.Errorf("ROLE on %s: %v %w", n.Name, v, err)
	}
	kind, _ = v[0].(string)
	if kind == "slave" && len(v) >= 4 {
		primaryPort, _ = v[2].(int64)
		state, _ := v[3].(string)
		linked = state == "connected"
	}
	return kind, primaryPort, linked, nil
}

// WaitReplicas waits until some data node replicates from primary with
// its link up, and returns those that do: the candidates of a failover.
// A demoted primary rejoins as a replica only when Sentinel gets round to
// it (some 10 s later); the next failover need not wait for that.
func (r *Replicated) WaitReplicas(ctx context.Context, primary *Node) ([]*Node, error) {
	for {
		var out []*Node
		for _, n := range r.Data {
			if n == primary {
				continue
			}
			if kind, port, linked, err := role(ctx, n); err == nil && kind == "slave" && int(port) == primary.Port && linked {
				out = append(out, n)
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the replicas of %s: %w", primary.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitPromoted waits until one of the replicas runs as a primary: from
// then on it no longer receives what the old primary writes. Sentinel
// learns of the promotion only at its next INFO, so this asks the nodes.
func (r *Replicated) WaitPromoted(ctx context.Context, replicas []*Node) (*Node, error) {
	for {
		for _, n := range replicas {
			if kind, _, _, err := role(ctx, n); err == nil && kind == "master" {
				return n, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a replica to be promoted: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// go-redis prints a pool's failed dials itself, to stderr: a server paused,
// cut off or stopped makes every client of it print them, over the
// progress display and into worker logs, where the history already has
// each outcome. They go to slog at debug level instead.
func init() { redis.SetLogger(redisLog{}) }

type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
}
