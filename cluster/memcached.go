package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// MemcachedBinary checks that memcached is installed.
func MemcachedBinary() (string, error) { return LookBinary("memcached", "memcached") }

// StartMemcached starts a memcached with memcached's default 64 MB for
// items. It is a cache: when full it evicts the least recently used items,
// a held lock's key among them (memory-pressure).
func (c *Cluster) StartMemcached(ctx context.Context, name string) (*Node, error) {
	bin, err := MemcachedBinary()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, Kind: "memcached", Port: port, ready: memcachedVersion, role: RoleLock}
	dir := filepath.Join(c.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	args := []string{"-l", c.backend.BindHost(), "-p", strconv.Itoa(port), "-U", "0", "-c", "1024"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached will not run as root unless told whom to run as
	}
	n.spec = Spec{Path: bin, Args: args}
	if err := c.add(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// memcachedVersion answers nil once the server replies to version.
func memcachedVersion(ctx context.Context, addr string) error {
	return answers(ctx, addr, "version", "VERSION ")
}
