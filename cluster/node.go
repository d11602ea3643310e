package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Node is one server of the run: a lock server, a replica, a sentinel or
// the protected resource. It can be stopped and restarted on the same port
// and data directory, which is what the kill-node fault needs; a server
// the user runs (Adopt) is a node too, but is never restarted.
type Node struct {
	Name string
	Kind string // "redis", …
	Port int
	Dir  string
	// Clock moves the node's wall clock; nil unless the cluster runs its
	// nodes under the clock shim.
	Clock *NodeClock

	spec Spec
	// setup, when set, prepares the node's directory once before the
	// server first starts (initdb), run to its end where the server will
	// run (SetupRunner).
	setup   *Spec
	ready   func(ctx context.Context, addr string) error
	backend Backend
	host    atomic.Pointer[string] // set by the backend when it starts the node
	// roleOf, when set, asks the servers for the node's role each time:
	// for a cluster that elects its own leader (etcd), not the harness.
	roleOf func(*Node) string
	// sessions counts the server's client sessions; nil for a kind
	// that cannot (sessions.go).
	sessions *sessionCounter
	// starts counts the times the node started, read without waiting for
	// a start under way: a fault's heal that restarted it shows as a
	// change.
	starts atomic.Int64

	mu   sync.Mutex
	role string
	proc Instance
	log  *CappedLog // kept across restarts
}

// Node roles. Faults aim at roles ("pause the primary"); a design that fails
// over updates them with SetRole.
const (
	RoleLock     = "lock" // a server clients take the lock on; no replication
	RolePrimary  = "primary"
	RoleReplica  = "replica"
	RoleSentinel = "sentinel"
	RoleResource = "resource" // the protected data: the checker's, or a design's own store
	RoleLeader   = "leader"   // the elected leader of a consensus cluster (etcd)
	RoleFollower = "follower" // a consensus member that does not lead now
)

// Role returns the node's current role (RoleLock unless set).
func (n *Node) Role() string {
	if n.roleOf != nil {
		return n.roleOf(n)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.role == "" {
		return RoleLock
	}
	return n.role
}

// SetRole records the node's role, e.g. after a failover.
func (n *Node) SetRole(role string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.role = role
}

// Addr is the node's address: on loopback for a local process, on the
// run's network for a container. Clients and peers dial it (through links).
func (n *Node) Addr() string { return net.JoinHostPort(n.Host(), strconv.Itoa(n.Port)) }

// Host is the host part of Addr: 127.0.0.1 until a backend says otherwise.
func (n *Node) Host() string {
	if h := n.host.Load(); h != nil {
		return *h
	}
	return "127.0.0.1"
}

// SetHost records the host a backend's Start gave the node (a container's
// address on the run's network), which Addr reports from then on.
func (n *Node) SetHost(h string) { n.host.Store(&h) }

// Spec is how the node's server is started (binary, arguments, directory,
// environment), whichever backend runs it.
func (n *Node) Spec() Spec { return n.spec }

// Process returns the node's current server instance (nil while it has
// never started): a local process or a container.
func (n *Node) Process() Instance {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Start starts (or restarts) the node and waits until it answers.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if u, ok := n.proc.(*userProcess); ok {
		return fmt.Errorf("start %s: it is your server at %s, which locktest does not start or restart", n.Name, u.server.Addr)
	}
	if n.proc != nil {
		if exited, _ := n.proc.Exited(); !exited {
			return fmt.Errorf("start %s: already running", n.Name)
		}
	}
	if n.log == nil {
		f, err := OpenCappedLog(filepath.Join(n.Dir, n.Name+".log"), LogLimit)
		if err != nil {
			return fmt.Errorf("start %s: %w", n.Name, err)
		}
		n.log = f
	}
	n.spec.Log = n.log
	b := n.backend
	if b == nil {
		b = local{}
	}
	p, err := b.Start(ctx, n, n.proc)
	if err != nil {
		return err
	}
	n.proc = p
	n.starts.Add(1)
	if err := waitReady(ctx, p, n.Addr(), n.ready); err != nil {
		_ = p.Kill()
		return fmt.Errorf("%s did not become ready (see %s): %w", n.Name, n.log.Name(), err)
	}
	return nil
}

// Starts is how many times the node's server was started (restarts
// included).
func (n *Node) Starts() int64 { return n.starts.Load() }

// Kill kills the node's process (continuing it first if paused).
func (n *Node) Kill() error {
	p := n.Process()
	if p == nil {
		return nil
	}
	return p.Kill()
}

// Stop stops the node gracefully, killing it after a grace period.
func (n *Node) Stop() error {
	p := n.Process()
	var err error
	if p != nil {
		err = p.Stop(3 * time.Second)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log != nil {
		n.log.Close()
		n.log = nil
	}
	return err
}

func waitReady(ctx context.Context, p Instance, addr string, ready func(context.Context, string) error) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var last error
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("exited during start-up: %v", err)
		}
		tctx, tcancel := context.WithTimeout(ctx, time.Second)
		last = ready(tctx, addr)
		tcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// handedOut holds every port FreePort returned in this process: the kernel
// may offer a port again as soon as its probe closes, and the parallel runs
// of a suite must not get the same one before its server binds it.
var handedOut sync.Map

// FreePort asks the kernel for a free port on loopback that this process
// has not handed out before. Another process may take it before the server
// binds; Start then fails and says so.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, taken := handedOut.LoadOrStore(port, true); !taken {
			return port, nil
		}
	}
	return 0, errors.New("find a free port: the kernel kept offering ports this process already uses")
}

// MissingBinaryError says which server binary is absent and how to get it.
type MissingBinaryError struct {
	Binary, Package string
}

func (e *MissingBinaryError) Error() string {
	if e.Package == "" {
		return fmt.Sprintf("%s not found (neither a path to a program nor a program in PATH)", e.Binary)
	}
	return fmt.Sprintf("%s not found in PATH: install it (Debian: apt-get install %s)", e.Binary, e.Package)
}

// LookBinary finds a server binary, or says which package provides it
// (pkg "": a program of the user's, which no package provides).
func LookBinary(binary, pkg string) (string, error) {
	path, err := exec.LookPath(binary)
	if err == nil {
		return path, nil
	}
	// Debian keeps PostgreSQL's server programs out of PATH, in
	// /usr/lib/postgresql/VERSION/bin: look there last, newest first.
	if !strings.ContainsRune(binary, '/') {
		found, _ := filepath.Glob(filepath.Join("/usr/lib/postgresql/*/bin", binary))
		sort.Slice(found, func(i, j int) bool { return pgVersion(found[i]) > pgVersion(found[j]) })
		if len(found) > 0 {
			return found[0], nil
		}
		// Daemons such as pgbouncer and mariadbd are in /usr/sbin, which
		// only root's PATH has.
		if path, err := exec.LookPath(filepath.Join("/usr/sbin", binary)); err == nil {
			return path, nil
		}
	}
	return "", &MissingBinaryError{Binary: binary, Package: pkg}
}
