package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
)

// bench is a small real deployment for fault tests: redis-servers under
// the clock shim, a resource, client processes, and a proxied link from
// every client to every server and to the resource.
type bench struct {
	c       *cluster.Cluster
	nodes   []*cluster.Node
	clients *procClients
	env     *faults.Env
	// started and stopped receive the targets of fault events.
	started, stopped chan string
}

// newBench starts n redis-servers (AOF when persist) and two clients.
func newBench(t *testing.T, n int, persist bool) *bench {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real redis-servers and client processes; run without -short")
	}
	shim, err := cluster.BuildClockShim(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{c: cluster.New(t.TempDir()), started: make(chan string, 16), stopped: make(chan string, 16)}
	t.Cleanup(func() {
		if err := b.c.Stop(); err != nil {
			t.Error(err)
		}
	})
	b.c.UseClockShim(shim)
	ctx := context.Background()
	for i := range n {
		node, err := b.c.StartRedis(ctx, fmt.Sprintf("redis-%d", i), cluster.RedisOptions{AOFAlways: persist})
		if err != nil {
			t.Fatal(err)
		}
		b.nodes = append(b.nodes, node)
	}
	res, err := b.c.StartRedis(ctx, cluster.RoleResource, cluster.RedisOptions{Role: cluster.RoleResource})
	if err != nil {
		t.Fatal(err)
	}
	b.clients = newProcClients(t, 2)
	for i := range 2 {
		for _, node := range append(b.nodes[:n:n], res) {
			if _, err := b.c.Link(cluster.LinkName(fmt.Sprintf("c%d", i), node.Name), node.Addr()); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.env = &faults.Env{
		Rand: rand.New(rand.NewPCG(1, 2)), Interval: 100 * time.Millisecond, Duration: 1500 * time.Millisecond,
		TTL: 500 * time.Millisecond, Latency: 300 * time.Millisecond, ClockDelta: 2 * time.Minute, ClockRate: 1,
		Clients: b.clients, Nodes: b.nodes, Links: b.c.Links(),
		// Client 0 is always the holder.
		Await:   func(context.Context, string) (int, error) { return 0, nil },
		Started: func(s faults.Strike) { b.started <- s.Target },
		Stopped: func(_, target string, _ time.Duration) { b.stopped <- target },
		Log:     slog.Default(),
	}
	return b
}

// run starts fault name aimed at target and returns the first target it
// hit, once in effect, and a stop function that ends the run and waits
// for Run to return.
func (b *bench) run(t *testing.T, name, target string) (string, func()) {
	t.Helper()
	f, err := faults.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if target == "" {
		target = f.Traits().Target
	}
	tg, err := faults.ParseTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := faults.CheckTarget(f, tg, impls.Design{Name: "test", Binaries: map[string]string{"redis-server": ""}}, 2); err != nil {
		t.Fatal(err)
	}
	b.env.Target = tg
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, b.env) }()
	var once sync.Once
	stop := func() { once.Do(func() { b.end(t, name, cancel, done) }) }
	select {
	case hit := <-b.started:
		return hit, stop
	case err := <-done:
		t.Fatalf("%s returned before starting: %v", name, err)
	case <-time.After(10 * time.Second):
		stop()
		t.Fatalf("%s never started", name)
	}
	return "", stop
}

// end ends a fault's run and waits for Run to return.
func (b *bench) end(t *testing.T, name string, cancel func(), done chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return after its run ended", name)
	}
}

// waitStopped waits for the fault to record its stop.
func (b *bench) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-b.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("fault never stopped")
	}
}

func (b *bench) node(t *testing.T, name string) *cluster.Node {
	t.Helper()
	for _, n := range b.nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q", name)
	return nil
}

func (b *bench) link(t *testing.T, name string) *cluster.Link {
	t.Helper()
	for _, l := range b.env.Links {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no link %q", name)
	return nil
}

// assertQuiet fails if anything is still stopped, cut or skewed.
func (b *bench) assertQuiet(t *testing.T) {
	t.Helper()
	for _, n := range b.nodes {
		if exited, _ := n.Process().Exited(); exited {
			t.Errorf("%s is down", n.Name)
		} else if n.Process().Stopped() {
			t.Errorf("%s is stopped", n.Name)
		}
		if off := n.Clock.Offset(); off != 0 {
			t.Errorf("%s clock is off by %v", n.Name, off)
		}
	}
	for _, l := range b.env.Links {
		if tx := l.Toxics(); len(tx) > 0 {
			t.Errorf("link %s still has %v", l.Name, tx)
		}
	}
	for i, p := range b.clients.procs {
		if exited, _ := p.Exited(); exited {
			t.Errorf("c%d is dead", i)
		}
		if p.Stopped() {
			t.Errorf("c%d is stopped", i)
		}
		if clk := b.clients.Clock(i); clk != [2]float64{0, 1} {
			t.Errorf("c%d clock is %v", i, clk)
		}
	}
}

// rtt times one PING round trip to addr on a fresh connection (the dial
// is not timed: a proxy accepts at once, whatever it then does).
func rtt(addr string, timeout time.Duration) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	start := time.Now()
	conn.SetDeadline(start.Add(timeout))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return time.Since(start), err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err == nil && !strings.HasPrefix(line, "+PONG") {
		err = fmt.Errorf("PING answered %q", line)
	}
	return time.Since(start), err
}

func client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
}

// procClients are real client processes (sleep) behind faults.Clients;
// the clock of each is the last (offset, rate) set.
type procClients struct {
	t     *testing.T
	mu    sync.Mutex
	procs []*cluster.Process
	clock [][2]float64
}

func newProcClients(t *testing.T, n int) *procClients {
	c := &procClients{t: t}
	for range n {
		c.procs = append(c.procs, c.start())
		c.clock = append(c.clock, [2]float64{0, 1})
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			_ = p.Kill()
		}
	})
	return c
}

func (c *procClients) start() *cluster.Process {
	path, err := exec.LookPath("sleep")
	if err != nil {
		c.t.Fatal(err)
	}
	p, err := cluster.Start(cluster.Spec{Name: "client", Path: path, Args: []string{"600"}, Dir: c.t.TempDir()})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

func (c *procClients) Len() int { return len(c.procs) }
func (c *procClients) Process(i int) *cluster.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i]
}
func (c *procClients) Crash(i int) error { return c.Process(i).Kill() }
func (c *procClients) Restart(i int) error {
	p := c.start()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs[i] = p
	return nil
}

// Clock returns the (offset, rate) client i's clock was last given.
func (c *procClients) Clock(i int) [2]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock[i]
}

func (c *procClients) SetClock(i int, offset time.Duration, rate float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock[i] = [2]float64{float64(offset), rate}
	return nil
}

// firstName returns the first node name in a fault target ("redis-1,redis-2
// +2m0s" → "redis-1").
func firstName(target string) string {
	name, _, _ := strings.Cut(target, " ")
	name, _, _ = strings.Cut(name, ",")
	name, _, _ = strings.Cut(name, "/")
	return name
}

// eventually polls cond for a second: a SIGSTOP takes effect when the
// target next runs, not when kill returns.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
