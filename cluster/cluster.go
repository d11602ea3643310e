package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Cluster owns the nodes and links of one run and stops them all at the end.
type Cluster struct {
	Dir string

	mu      sync.Mutex
	nodes   []*Node
	shim    string
	links   links
	backend Backend
	// lab, when set, holds every server and client in a network namespace
	// of its own (NewInLab).
	lab *Lab
	// kernel, when set, makes links kernel links: the lab, or the hosts'
	// firewalls (NewWith).
	kernel Firewalls
	// guard continues the user's servers once its stdin closes (Adopt).
	guard *os.File
	// timeouts are the lock servers' (SetTimeouts).
	timeouts Timeouts
	// eviction is the lock's Redis servers' maxmemory-policy (SetEviction).
	eviction string

	closeOnce sync.Once
	closeErr  error
}

// New returns a cluster whose nodes live under dir, run as local processes.
func New(dir string) *Cluster { return &Cluster{Dir: dir, backend: local{}} }

// NewOn returns a cluster whose nodes run on the named backend
// ("local", or one a package registered, e.g. cluster/container's
// "docker"; see RegisterBackend).
func NewOn(dir, backend string) (*Cluster, error) {
	if backend == "" || backend == LocalBackend {
		return New(dir), nil
	}
	if err := CheckBackend(backend); err != nil {
		return nil, err
	}
	reg, _ := backends.Lookup(backend) // checked above
	b, err := reg.make(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, backend: b}
	trackBackend(c)
	return c, nil
}

// NewWith returns a cluster whose nodes run on b, a backend its caller
// made with settings of its own (the hosts of --nodes, cluster/remote),
// which NewOn's factories do not take; its links are kernel links placed
// by fw, or proxies when fw is nil.
func NewWith(dir string, b Backend, fw Firewalls) *Cluster {
	c := &Cluster{Dir: dir, backend: b, kernel: fw}
	trackBackend(c)
	return c
}

// ReserveHost returns the host the node called name will listen on, so
// that a deploy function can write it into configurations before the
// node starts (see Backend.Reserve).
func (c *Cluster) ReserveHost(ctx context.Context, name string) (string, error) {
	return c.backend.Reserve(ctx, name)
}

// Backend returns what runs the cluster's servers.
func (c *Cluster) Backend() Backend { return c.backend }

// Nodes returns the nodes in start order.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.nodes...)
}

// add registers a node, gives it a port and directory, and starts it.
func (c *Cluster) add(ctx context.Context, n *Node) error {
	if n.Port == 0 {
		port, err := FreePort()
		if err != nil {
			return err
		}
		n.Port = port
	}
	n.Dir = filepath.Join(c.Dir, n.Name)
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", n.Dir, err)
	}
	if n.spec.Dir == "" {
		n.spec.Dir = n.Dir
	}
	n.spec.Name = n.Name
	n.backend = c.backend
	c.mu.Lock()
	shim := c.shim
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	if shim != "" {
		clk, err := newNodeClock(filepath.Join(n.Dir, "clock-offset"))
		if err != nil {
			return err
		}
		n.Clock = clk
		n.spec.Env = append(n.spec.Env, "LD_PRELOAD="+shim, clockFileEnv+"="+clk.path)
	}
	if n.setup != nil {
		if err := c.runSetup(ctx, n); err != nil {
			return err
		}
	}
	return n.Start(ctx)
}

// A SetupRunner is a backend whose servers run where this host's
// programs cannot prepare their directories (the hosts of --nodes): it
// runs a node's setup program there. Elsewhere the setup runs here, on the
// directory the server sees (a container mounts it).
type SetupRunner interface {
	// RunSetup runs setup for n to its end where n's server will run,
	// its output into setup.Log.
	RunSetup(ctx context.Context, n *Node, setup Spec) error
}

// runSetup runs n's setup program, its output in the node's directory
// as PROGRAM.log.
func (c *Cluster) runSetup(ctx context.Context, n *Node) error {
	s := *n.setup
	s.Name = n.Name + "-" + filepath.Base(s.Path)
	if s.Dir == "" {
		s.Dir = n.Dir
	}
	logf, err := os.Create(filepath.Join(n.Dir, filepath.Base(s.Path)+".log"))
	if err != nil {
		return fmt.Errorf("create the log of %s: %w", s.Name, err)
	}
	defer logf.Close()
	s.Log = logf
	if r, ok := c.backend.(SetupRunner); ok {
		err = r.RunSetup(ctx, n, s)
	} else {
		err = runToEnd(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("%s for %s failed (see %s): %w", filepath.Base(s.Path), n.Name, logf.Name(), err)
	}
	return nil
}

// runToEnd runs spec here and waits for it to exit; it is killed if ctx
// ends first.
func runToEnd(ctx context.Context, spec Spec) error {
	p, err := Start(spec)
	if err != nil {
		return err
	}
	if err := p.Wait(ctx); err != nil {
		_ = p.Kill()
		return err
	}
	return nil
}

// UseClockShim makes every node started from now on read its wall clock
// through the shim at path (see BuildClockShim), so that its Clock can move
// it. Servers that do not read time through libc (Go's vDSO reads, say)
// simply do not move.
func (c *Cluster) UseClockShim(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shim = path
}

// Stop closes every link, then stops every node in reverse start order.
func (c *Cluster) Stop() error {
	c.closeLinks()
	nodes := c.Nodes()
	errs := make([]error, len(nodes))
	stop := func(i int) {
		errs[i] = nodes[i].Stop()
		if nodes[i].Clock != nil {
			nodes[i].Clock.close()
		}
	}
	if _, isLocal := c.backend.(local); isLocal {
		for i := len(nodes) - 1; i >= 0; i-- {
			stop(i)
		}
	} else {
		// Stopping a container is a round of engine calls (stop, logs,
		// remove) of a second or so: all at once.
		var wg sync.WaitGroup
		for i := range nodes {
			wg.Go(func() { stop(i) })
		}
		wg.Wait()
	}
	if err := c.closeBackend(); err != nil {
		errs = append(errs, err)
	}
	c.mu.Lock()
	if c.guard != nil {
		c.guard.Close() // its SIGCONT finds the user's servers running
		c.guard = nil
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// Kill kills every node at once, for an interrupted run that cannot wait
// for graceful stops of seconds each. Stop must still follow.
func (c *Cluster) Kill() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		wg.Go(func() { _ = n.Kill() })
	}
	wg.Wait()
}
