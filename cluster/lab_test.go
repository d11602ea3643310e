package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inLab runs the calling test again in a network namespace of its own
// (as RerunInLab does for a run) and reports whether the caller is that
// run: the test's body goes on only there. The outer test passes or fails
// with the inner one.
func inLab(t *testing.T) bool {
	t.Helper()
	if InLab() {
		if err := StartLab(); err != nil {
			t.Fatal(err)
		}
		return true
	}
	if err := LabSupport(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), LabEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in its own network namespace: %v\n%s", err, out)
	}
	t.Logf("in its own network namespace:\n%s", out)
	return false
}

// labRedis starts a redis-server in a lab of its own, a client endpoint
// c0, and the kernel link c0:redis-0.
func labRedis(t *testing.T) (*Cluster, *Node, *Endpoint, *Link) {
	t.Helper()
	c, err := NewInLab(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.StartRedis(ctx, "redis-0", RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c0, err := c.ClientNet("c0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Link(LinkName("c0", n.Name), n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if !l.Kernel() || l.Addr() != n.Addr() {
		t.Fatalf("link in a lab: kernel %v, address %s, want the server's %s", l.Kernel(), l.Addr(), n.Addr())
	}
	return c, n, c0, l
}

// inNet runs f on a thread in e's network namespace: a socket made there
// stays there, so the test talks as the client at e would.
func inNet[T any](t *testing.T, e *Endpoint, f func() (T, error)) T {
	t.Helper()
	var v T
	if err := runIn(e.ns, func() (err error) {
		v, err = f()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// redisConn is a connection to redis from a client endpoint.
type redisConn struct {
	net.Conn
	br *bufio.Reader
}

func dialFrom(t *testing.T, e *Endpoint, addr string) *redisConn {
	t.Helper()
	c := inNet(t, e, func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) })
	t.Cleanup(func() { c.Close() })
	return &redisConn{c, bufio.NewReader(c)}
}

// send writes one inline command; reply reads one reply line within d.
func (c *redisConn) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
}

func (c *redisConn) reply(d time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(d))
	line, err := c.br.ReadString('\n')
	return strings.TrimSpace(line), err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestKernelPartitionKeepsConnection: a 2 s partition made by the kernel
// holds a request and delivers it after the heal on the same connection
// (TCP retransmits), where the proxy's heal closes the connection it cut.
// Cost: about 8 s (two 2 s partitions and a retransmission's wait).
func TestKernelPartitionKeepsConnection(t *testing.T) {
	if !inLab(t) {
		return
	}
	c, n, c0, l := labRedis(t)
	conn := dialFrom(t, c0, l.Addr())
	conn.send(t, "PING")
	if r, err := conn.reply(5 * time.Second); r != "+PONG" {
		t.Fatalf("before the partition: %q, %v", r, err)
	}
	if err := l.Cut("test"); err != nil {
		t.Fatal(err)
	}
	if got := l.Toxics(); len(got) != 1 || got[0] != "test/cut" {
		t.Fatalf("effects on the link: %v, want [test/cut]", got)
	}
	conn.send(t, "PING")
	if r, err := conn.reply(2 * time.Second); !isTimeout(err) {
		t.Fatalf("during the partition: %q, %v; want no reply", r, err)
	}
	if err := l.Heal("test"); err != nil {
		t.Fatal(err)
	}
	if got := l.Toxics(); len(got) != 0 {
		t.Fatalf("effects after the heal: %v", got)
	}
	if r, err := conn.reply(10 * time.Second); r != "+PONG" {
		t.Fatalf("after the heal, on the same connection: %q, %v; want the reply held by the partition", r, err)
	}

	// The proxy, for contrast: its heal closes the connection it cut.
	pc := New(t.TempDir())
	t.Cleanup(func() { _ = pc.Stop() })
	pl, err := pc.Link("c0:redis-0", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Dial("tcp", pl.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	proxied := &redisConn{raw, bufio.NewReader(raw)}
	proxied.send(t, "PING")
	if r, err := proxied.reply(5 * time.Second); r != "+PONG" {
		t.Fatalf("through the proxy: %q, %v", r, err)
	}
	if err := pl.Cut("test"); err != nil {
		t.Fatal(err)
	}
	proxied.send(t, "PING")
	time.Sleep(2 * time.Second)
	if err := pl.Heal("test"); err != nil {
		t.Fatal(err)
	}
	if r, err := proxied.reply(5 * time.Second); err == nil || isTimeout(err) {
		t.Fatalf("after the proxy's heal: %q, %v; want the connection closed", r, err)
	}
	_ = c
}

// TestKernelOneWayPartition: dropping what goes to the server loses the
// request; dropping what comes from it lets the request act while its
// reply is held. The coordinator, outside the partition, sees which.
// Cost: about 4 s.
func TestKernelOneWayPartition(t *testing.T) {
	if !inLab(t) {
		return
	}
	_, n, c0, l := labRedis(t)
	conn := dialFrom(t, c0, l.Addr())
	observer, err := net.Dial("tcp", n.Addr()) // from the coordinator's namespace
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	obs := &redisConn{observer, bufio.NewReader(observer)}
	get := func(key string) string {
		t.Helper()
		obs.send(t, "EXISTS "+key)
		r, err := obs.reply(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		towardServer bool
		key          string
		applied      string // EXISTS during the partition
	}{{true, "in", ":0"}, {false, "out", ":1"}} {
		if err := l.Drop("test", c.towardServer); err != nil {
			t.Fatal(err)
		}
		conn.send(t, "SET "+c.key+" 1")
		if r, err := conn.reply(time.Second); !isTimeout(err) {
			t.Fatalf("%s: a reply during the partition: %q, %v", c.key, r, err)
		}
		if got := get(c.key); got != c.applied {
			t.Errorf("%s: during the partition the server has the key: %s, want %s", c.key, got, c.applied)
		}
		if err := l.Heal("test"); err != nil {
			t.Fatal(err)
		}
		if r, err := conn.reply(10 * time.Second); r != "+OK" {
			t.Fatalf("%s: after the heal: %q, %v", c.key, r, err)
		}
	}
}

// TestKernelResetAndLoss: a reset link answers with RST, so the open
// connection fails and a new one is refused until the heal; a loss of 0.3
// drops about that share of datagrams each way. Cost: about 1 s.
func TestKernelResetAndLoss(t *testing.T) {
	if !inLab(t) {
		return
	}
	_, n, c0, l := labRedis(t)
	conn := dialFrom(t, c0, l.Addr())
	if err := l.Reset("test"); err != nil {
		t.Fatal(err)
	}
	conn.send(t, "PING")
	if r, err := conn.reply(5 * time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("on a reset link: %q, %v; want a reset", r, err)
	}
	if _, err := net.DialTimeout("tcp", n.Addr(), time.Second); err != nil {
		t.Fatalf("the coordinator is outside the link: %v", err)
	}
	inNet(t, c0, func() (bool, error) {
		c, err := net.DialTimeout("tcp", l.Addr(), 5*time.Second)
		if err == nil {
			c.Close()
			return false, errors.New("a new connection on a reset link was accepted")
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return false, err
		}
		return true, nil
	})
	if err := l.Heal("test"); err != nil {
		t.Fatal(err)
	}
	again := dialFrom(t, c0, l.Addr())
	again.send(t, "PING")
	if r, err := again.reply(5 * time.Second); r != "+PONG" {
		t.Fatalf("after the heal: %q, %v", r, err)
	}

	// Loss: datagrams from c0 to a receiver at the server's address.
	recv := inNet(t, n.backend.(labBackend).lab.endpoint(n.Name), func() (net.PacketConn, error) {
		return net.ListenPacket("udp4", net.JoinHostPort(n.Host(), "0"))
	})
	defer recv.Close()
	if err := l.Lose("test", 0.3); err != nil {
		t.Fatal(err)
	}
	const sent = 2000
	got := make(chan int)
	go func() {
		buf := make([]byte, 16)
		count := 0
		for {
			recv.SetReadDeadline(time.Now().Add(time.Second))
			if _, _, err := recv.ReadFrom(buf); err != nil {
				got <- count
				return
			}
			count++
		}
	}()
	sender := inNet(t, c0, func() (net.Conn, error) { return net.Dial("udp4", recv.LocalAddr().String()) })
	defer sender.Close()
	for range sent {
		if _, err := sender.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Microsecond) // no drops of the receiver's own
	}
	share := float64(<-got) / sent
	// 0.7 of 2000 has a standard deviation of 0.01: 0.6–0.8 is ten.
	if share < 0.6 || share > 0.8 {
		t.Errorf("with loss 0.3, %.3f of the datagrams arrived, want about 0.7", share)
	}
	t.Logf("with loss 0.3, %.3f of %d datagrams arrived", share, sent)
	if err := l.Heal(""); err != nil {
		t.Fatal(err)
	}
}

// labPhaseEnv tells TestLabCoordinator how far to build its lab before it
// says it is ready to be killed.
const labPhaseEnv = "LOCKTEST_TEST_LAB_PHASE"

// TestLabCoordinator is not a test of its own: TestLabLeavesNothing runs
// it as a coordinator to SIGKILL. It reruns itself in a lab, builds the
// lab up to the phase asked (a bridge; endpoints with a process each;
// rules in their firewalls), prints "ready PID MARKER" and waits.
func TestLabCoordinator(t *testing.T) {
	phase := os.Getenv(labPhaseEnv)
	if phase == "" {
		return // only as TestLabLeavesNothing's coordinator
	}
	if !InLab() {
		code, err := RerunInLab(os.Args[1:])
		if err != nil || code != 0 {
			t.Fatalf("lab: exit %d, %v", code, err)
		}
		return
	}
	if err := StartLab(); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("3141.%d", os.Getpid())
	if phase != "start" {
		c, err := NewInLab(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"n0", "n1", "c0"} {
			e, err := c.lab.Endpoint(name, name == "c0")
			if err != nil {
				t.Fatal(err)
			}
			if phase == "lab" {
				break
			}
			if _, err := Start(Spec{Name: name, Path: "sleep", Args: []string{marker}, Net: e}); err != nil {
				t.Fatal(err)
			}
		}
		if phase == "rules" {
			for _, name := range []string{"c0:n0", "n1:n0"} {
				l, err := c.Link(name, "")
				if err != nil {
					t.Fatal(err)
				}
				if err := errors.Join(l.Cut("t"), l.Lose("u", 0.5), l.Reset("v")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	fmt.Printf("ready %d %s\n", os.Getpid(), marker)
	time.Sleep(time.Minute)
}

// hostNetwork is HostNetwork, failing the test when a tool fails.
func hostNetwork(t *testing.T) string {
	t.Helper()
	s, err := HostNetwork()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withMarker lists the processes whose command line holds marker.
func withMarker(marker string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), marker) {
			out = append(out, d.Name())
		}
	}
	return out
}

// TestLabLeavesNothing SIGKILLs a coordinator whose lab is at each phase
// of its making: after it entered its namespace, with a bridge and
// endpoints, with a process in each, with rules in their firewalls. The
// host's interfaces, namespaces and rulesets are then what they were, and
// no process of the lab is left. Cost: about 2 s a phase.
func TestLabLeavesNothing(t *testing.T) {
	if err := LabSupport(); err != nil {
		t.Fatal(err)
	}
	before := hostNetwork(t)
	for _, phase := range []string{"start", "lab", "procs", "rules"} {
		t.Run(phase, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestLabCoordinator$", "-test.count=1")
			cmd.Env = append(os.Environ(), labPhaseEnv+"="+phase)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			var pid int
			var marker string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if _, err := fmt.Sscanf(sc.Text(), "ready %d %s", &pid, &marker); err == nil {
					break
				}
			}
			if marker == "" {
				_ = cmd.Process.Kill()
				t.Fatal("the coordinator never said it was ready")
			}
			if phase == "procs" || phase == "rules" {
				if got := withMarker(marker); len(got) != 3 {
					t.Fatalf("before the kill, %d processes in the lab, want 3", len(got))
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, labErr := os.Stat(fmt.Sprintf("/proc/%d", pid))
				left := withMarker(marker)
				after := hostNetwork(t)
				if errors.Is(labErr, os.ErrNotExist) && len(left) == 0 && after == before {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("10 s after the SIGKILL: lab process alive %v, processes left %v, host network changed %v:\n%s",
						labErr == nil, left, after != before, after)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// TestChildAfterNewNamespaceIsBornHome: a child started with no endpoint
// right after a lab made a namespace is not born in that namespace.
// netns.New moves the spawning thread, and a suite's proxied run once had
// its resource server started in the namespace a lab run beside it had
// just made, where its coordinator could not reach it.
func TestChildAfterNewNamespaceIsBornHome(t *testing.T) {
	if err := LabSupport(); err != nil {
		t.Fatal(err)
	}
	ns, err := newNamespace()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var made unix.Stat_t
	if err := unix.Fstat(int(ns), &made); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd := exec.Command("readlink", "/proc/self/ns/net")
	cmd.Stdout = &out
	if err := startLocked(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got == fmt.Sprintf("net:[%d]", made.Ino) {
		t.Fatalf("child born in %s, the namespace the lab had just made", got)
	}
}
