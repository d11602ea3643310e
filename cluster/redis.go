package cluster

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RedisOptions configure a redis-server node.
type RedisOptions struct {
	// AOFAlways persists every write with appendfsync always; otherwise the
	// node keeps nothing on disk and restarts empty.
	AOFAlways bool
	// ReplicaOf is "host port" of a primary, for replicas.
	ReplicaOf string
	// Config lines appended to the generated redis.conf.
	Config []string
	// Env is added to the server's environment.
	Env []string
	// Role is the node's role in its design (default RoleLock).
	Role string

	kind   string             // Node.Kind, default "redis"
	roleOf func(*Node) string // see Node.roleOf
}

// RedisBinary checks that redis-server is installed.
func RedisBinary() (string, error) { return LookBinary("redis-server", "redis-server") }

// StartRedis starts a redis-server bound to loopback on a free port, with
// its data and log in its own directory under the cluster's.
func (c *Cluster) StartRedis(ctx context.Context, name string, opt RedisOptions) (*Node, error) {
	bin, err := RedisBinary()
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, Kind: cmp.Or(opt.kind, "redis"), ready: pingRedis, role: opt.Role, roleOf: opt.roleOf,
		sessions: &sessionCounter{what: "connected clients", count: redisClients}}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	n.Port = port
	dir := filepath.Join(c.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	conf := []string{
		"bind " + c.backend.BindHost(),
		fmt.Sprintf("port %d", port),
		"protected-mode no",
		"daemonize no",
		"save \"\"",
		"dir " + dir,
		"logfile \"\"",
		"appendonly no",
	}
	if opt.AOFAlways {
		conf = append(conf, "appendonly yes", "appendfsync always")
	}
	if opt.ReplicaOf != "" {
		conf = append(conf, "replicaof "+opt.ReplicaOf)
	}
	if opt.Role != RoleResource {
		conf = append(conf, knobLines(c.timeoutKnobs("redis-server"), " ")...)
		if policy := c.evictionPolicy(); policy != "" {
			conf = append(conf, "maxmemory-policy "+policy)
		}
	}
	conf = append(conf, opt.Config...)
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", confPath, err)
	}
	n.spec = Spec{Path: bin, Args: []string{confPath}, Env: opt.Env}
	if err := c.add(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// pingRedis answers nil once the server replies PONG: it is loaded and
// accepting commands, not merely listening.
func pingRedis(ctx context.Context, addr string) error { return answers(ctx, addr, "PING", "+PONG") }

// answers asks the server at addr one line of a text protocol and answers
// nil once the reply begins with want.
func answers(ctx context.Context, addr, ask, want string) error {
	conn, err := dialReady(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(ask + "\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, want) {
		return fmt.Errorf("%s answered %q", ask, strings.TrimSpace(line))
	}
	return nil
}

// redisClients is the server's connected_clients (INFO clients) less the
// connection that asks: every connection a client, replica or sentinel
// holds open to it. A Redis lock's lease lives in a key, not a session, so
// what a Redis server can leak is connections; the port's count sees them
// too, but this is the server's own word, which a connection it has
// already dropped and the kernel not yet reaped does not inflate.
func redisClients(ctx context.Context, addr string) (int, error) {
	conn, err := dialReady(ctx, addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("INFO clients\r\n")); err != nil {
		return 0, fmt.Errorf("ask INFO clients: %w", err)
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("read INFO clients: %w", err)
	}
	size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return 0, fmt.Errorf("INFO clients answered %q", strings.TrimSpace(head))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, fmt.Errorf("read INFO clients: %w", err)
	}
	n, err := statField(string(body), "connected_clients:")
	if err != nil {
		return 0, fmt.Errorf("INFO clients: %w", err)
	}
	return n - 1, nil // the asking connection is one
}

// statField reads the integer after prefix at the start of a line of
// text (Redis's INFO).
func statField(text, prefix string) (int, error) {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("%s%q is no number", prefix, strings.TrimSpace(v))
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no %s line", strings.TrimSuffix(strings.TrimSpace(prefix), ":"))
}

// EvictionPolicies are the values of Redis's maxmemory-policy.
var EvictionPolicies = []string{"noeviction", "allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu",
	"allkeys-random", "volatile-random", "volatile-ttl"}

// SetEviction gives the lock's Redis servers started from now on the
// maxmemory-policy policy ("" keeps the server's default, noeviction). The
// resource is the checker's and never evicts.
func (c *Cluster) SetEviction(policy string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eviction = policy
}

func (c *Cluster) evictionPolicy() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eviction
}
