package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ZooKeeper's jars as Debian's zookeeper package installs them. The
// server jar's manifest names its dependencies; slf4j-simple gives its
// log lines somewhere to go (the node's log) instead of nowhere.
const (
	zooKeeperJar  = "/usr/share/java/zookeeper.jar"
	slf4jSimple   = "/usr/share/java/slf4j-simple.jar"
	zooKeeperMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// zooKeeperJVM are the JVM flags of every ZooKeeper server. A test
// ensemble is small and short-lived, and on a two-core machine the C2 JIT
// and parallel GC threads only compete with everything else at start-up:
// the C1 compiler alone, the serial collector, class-data sharing and a
// small heap cut the three JVMs' start-up CPU by about a quarter (measured
// 3.6 → 2.7 CPU-seconds until all serve). The ensemble then forms in about
// two seconds on an idle machine, five to seven under heavy load.
// -XX:-UsePerfData leaves no hsperfdata file behind in /tmp.
var zooKeeperJVM = []string{"-Xms16m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
	"-XX:-UsePerfData", "-Djava.awt.headless=true"}

// zooKeeperTick is the ensemble's tickTime: the unit of its timeouts. A
// short tick lets a session timeout of under a second be accepted (the
// minimum is two ticks) and lets a follower notice a dead leader within
// syncLimit ticks; 100 ms made followers time out while their peers'
// JVMs were still warming up on two busy cores.
const zooKeeperTick = 200 * time.Millisecond

// ZooKeeperBinaries checks that java and ZooKeeper's jar are installed.
func ZooKeeperBinaries() (string, error) {
	java, err := LookBinary("java", "zookeeper")
	if err != nil {
		return "", err
	}
	for _, jar := range []string{zooKeeperJar, slf4jSimple} {
		if _, err := os.Stat(jar); err != nil {
			return "", &MissingBinaryError{Binary: jar, Package: "zookeeper"}
		}
	}
	return java, nil
}

// Ensemble is a ZooKeeper ensemble started by StartZooKeeper. Node roles
// follow the servers' own answer to "srvr": the leader is RolePrimary, the
// followers RoleReplica, so a fault aimed at "primary" hits the leader of
// the moment.
type Ensemble struct {
	Nodes []*Node
}

// StartZooKeeper starts an ensemble of n servers on loopback and waits
// until every one of them serves clients (a leader is elected and the
// followers synced).
//
// Each server dials its peers through links ("zk-0:zk-1" for the quorum
// port, "zk-0:zk-1/election" for leader election), so a partition cuts a
// server off from its peers as well as from clients: each server gets its
// own zoo.cfg in which the other servers' addresses are its proxies.
//
// One path escapes the links: when a lower-numbered server opens an
// election connection, the higher one drops it and dials back the address
// the lower one advertises, its real election port (ZooKeeper's
// QuorumCnxManager keeps one connection per pair, dialled by the higher
// id). Left up across a partition, such a connection let a cut-off leader
// with the highest id keep winning votes it could not serve, and the
// ensemble stalled. So cutting an election link between two servers also
// shuts down their direct election connections, either way; once both
// links of the pair are cut no new one can form until they heal.
func (c *Cluster) StartZooKeeper(ctx context.Context, n int) (*Ensemble, error) {
	java, err := ZooKeeperBinaries()
	if err != nil {
		return nil, err
	}
	// The ports are chosen before the servers bind them, and the peer
	// links' proxies bind ports of the kernel's choosing in between: take
	// the servers' ports from below the kernel's ephemeral range, where no
	// proxy can land on them.
	type ports struct{ client, quorum, election int }
	ps := make([]ports, n)
	for i := range ps {
		for _, p := range []*int{&ps[i].client, &ps[i].quorum, &ps[i].election} {
			if *p, err = staticPort(); err != nil {
				return nil, err
			}
		}
	}
	name := func(i int) string { return fmt.Sprintf("zk-%d", i) }
	// Each server's own address, known before any starts (a container's
	// is on the run's network).
	hosts := make([]string, n)
	for i := range hosts {
		if hosts[i], err = c.ReserveHost(ctx, name(i)); err != nil {
			return nil, err
		}
	}
	at := func(j, port int) string { return net.JoinHostPort(hosts[j], strconv.Itoa(port)) }
	e := &Ensemble{}
	for i := range n {
		var servers []string
		for j := range n {
			quorum, election := at(j, ps[j].quorum), at(j, ps[j].election)
			if j != i {
				lq, err := c.Link(LinkName(name(i), name(j)), quorum)
				if err != nil {
					return nil, err
				}
				le, err := c.Link(LinkName(name(i), name(j))+"/election", election)
				if err != nil {
					return nil, err
				}
				// Both ways: until both links of the pair are cut, a
				// connection around one can form through the other. A
				// kernel link drops every packet between the two servers,
				// whatever port: nothing goes around it.
				if !le.Kernel() {
					le.bypass = func() error {
						return errors.Join(e.closeDirect(i, ps[j].election), e.closeDirect(j, ps[i].election))
					}
				}
				quorum, election = lq.Addr(), le.Addr()
			}
			// Quorum and election share a host; the line names it once.
			_, electionPort, _ := net.SplitHostPort(election)
			servers = append(servers, fmt.Sprintf("server.%d=%s:%s", j+1, quorum, electionPort))
		}
		node := &Node{Name: name(i), Kind: "zookeeper", Port: ps[i].client, ready: zooKeeperRunning, role: RoleReplica,
			sessions: &sessionCounter{what: "sessions", count: zooKeeperSessions}}
		dir := filepath.Join(c.Dir, node.Name)
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", data, err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			return nil, fmt.Errorf("write myid of %s: %w", node.Name, err)
		}
		tick := zooKeeperTick.Milliseconds()
		conf := append([]string{
			fmt.Sprintf("tickTime=%d", tick),
			// Ticks a new leader waits for a quorum of followers: 2 s. A
			// follower that dials the leader's link before the leader
			// listens sees the proxy close on it, not a refusal, gives up
			// and starts another election round the leader ignores until
			// this runs out: it bounds that stall.
			"initLimit=10",
			"syncLimit=10", // ticks a follower may lag before the leader drops it: 2 s
			"dataDir=" + data,
			fmt.Sprintf("clientPort=%d", ps[i].client),
			"clientPortAddress=" + c.backend.BindHost(),
			// A session timeout as short as two ticks, as long as a minute.
			fmt.Sprintf("minSessionTimeout=%d", 2*tick),
			"maxSessionTimeout=60000",
			// The ensemble lives as long as one run: no fsync per
			// transaction (a killed server keeps what the kernel has), no
			// admin web server, no JMX.
			"forceSync=no",
			"admin.enableServer=false",
			"4lw.commands.whitelist=ruok,srvr,cons", // cons: zooKeeperSessions
			"reconfigEnabled=false",
		}, servers...)
		if c.backend.BindHost() != "127.0.0.1" {
			// In a container the server's own line names its address on the
			// run's network; listen there and on loopback alike.
			conf = append(conf, "quorumListenOnAllIPs=true")
		}
		confPath := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", confPath, err)
		}
		args := append(append([]string(nil), zooKeeperJVM...), "-Dzookeeper.jmx.log4j.disable=true",
			// Election notifications back off up to a minute by default; a
			// server that missed the vote would wait that long to rejoin.
			"-Dzookeeper.fastleader.maxNotificationInterval=1000",
			"-Dorg.slf4j.simpleLogger.showDateTime=true", "-cp", zooKeeperJar+":"+slf4jSimple, zooKeeperMain, confPath)
		node.spec = Spec{Path: java, Args: args}
		// A lone server answers ruok but serves nobody until a quorum runs:
		// start them all, then wait for the ensemble.
		if err := c.add(ctx, node); err != nil {
			return nil, err
		}
		e.Nodes = append(e.Nodes, node)
	}
	if err := e.waitServing(ctx); err != nil {
		return nil, err
	}
	for _, node := range e.Nodes {
		// A server restarted later (kill-node) is ready once it serves
		// again: its peers are up to take it back.
		node.mu.Lock()
		node.ready = zooKeeperServing
		node.mu.Unlock()
	}
	go e.followRoles()
	return e, nil
}

// closeDirect shuts down server i's connections to a peer's real
// election port, which bypass the links (see StartZooKeeper).
func (e *Ensemble) closeDirect(i, port int) error {
	inst := e.Nodes[i].Process()
	if inst == nil {
		return nil
	}
	if exited, _ := inst.Exited(); exited {
		return nil
	}
	pid, err := inst.HostPid()
	if err != nil {
		return err
	}
	_, err = shutdownConnectionsTo(pid, port)
	return err
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// staticPort returns a free loopback port below the kernel's ephemeral
// range (which listeners on port 0, such as the links, draw from) that
// this process has not handed out before.
func staticPort() (int, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const floor = 10000
	if low <= floor+1000 {
		return FreePort() // no room below the range: take the kernel's choice
	}
	for range 1000 {
		port := floor + rand.IntN(low-floor)
		l, err := net.Listen("tcp", loopback(port))
		if err != nil {
			continue
		}
		l.Close()
		if _, taken := handedOut.LoadOrStore(port, true); !taken {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port between %d and %d", floor, low)
}

// waitServing waits until every server serves clients, one as the leader,
// and sets the roles. (A server that lost an election race may say it
// leads while it waits in vain for followers.)
func (e *Ensemble) waitServing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		var errs []error
		leaders := 0
		for _, n := range e.Nodes {
			mode, err := zooKeeperMode(ctx, n.Addr())
			errs = append(errs, err)
			if mode == "leader" {
				leaders++
			}
		}
		err := errors.Join(errs...)
		if err == nil && leaders != 1 {
			err = fmt.Errorf("%d servers say they lead", leaders)
		}
		if err == nil {
			e.setRoles()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zookeeper ensemble did not form (see the zk-*.log files): %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// followRoles keeps the roles in step with the ensemble's leader, however
// it changed (a fault, an election), until the servers stop.
func (e *Ensemble) followRoles() {
	for {
		time.Sleep(200 * time.Millisecond)
		if !anyRunning(e.Nodes) {
			return
		}
		e.setRoles()
	}
}

// setRoles asks each server what it is. When exactly one says it leads,
// it is the primary and every other server a replica; otherwise (an
// election under way, or a cut-off leader that has not noticed yet) the
// roles stay as they were, so "primary" means the last known leader and
// never two servers.
func (e *Ensemble) setRoles() {
	var leaders []*Node
	for _, n := range e.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		mode, err := zooKeeperMode(ctx, n.Addr())
		cancel()
		if err == nil && mode == "leader" {
			leaders = append(leaders, n)
		}
	}
	if len(leaders) != 1 {
		return
	}
	for _, n := range e.Nodes {
		if n == leaders[0] {
			n.SetRole(RolePrimary)
		} else {
			n.SetRole(RoleReplica)
		}
	}
}

// fourLetter sends one of ZooKeeper's four-letter commands and returns the
// whole answer (the server closes the connection after it).
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	conn, err := dialReady(ctx, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	return string(out), err
}

// zooKeeperSessions counts the server's connections that carry a
// session (cons: those with a sid), which leaves out four-letter
// questions like this one and the harness's own role polls (srvr). A
// ZooKeeper client's session lives on one connection at a time, and a
// lock's ephemeral node lives with the session. A session whose client is
// gone outlives its connection only until its timeout; a connection with
// a session still open at the last sample is held for a client that is
// gone.
func zooKeeperSessions(ctx context.Context, addr string) (int, error) {
	out, err := fourLetter(ctx, addr, "cons")
	if err != nil {
		return 0, err
	}
	if !strings.Contains(out, "queued=") {
		return 0, fmt.Errorf("cons answered %.80q", out)
	}
	n := 0
	for line := range strings.Lines(out) {
		if strings.Contains(line, ",sid=0x") {
			n++
		}
	}
	return n, nil
}

// zooKeeperRunning answers nil once the server answers ruok: the process
// is up, whether or not it has a quorum yet.
func zooKeeperRunning(ctx context.Context, addr string) error {
	out, err := fourLetter(ctx, addr, "ruok")
	if err != nil {
		return err
	}
	if out != "imok" {
		return fmt.Errorf("ruok answered %q", out)
	}
	return nil
}

// zooKeeperServing answers nil once the server serves clients: it is the
// leader or a follower synced with one.
func zooKeeperServing(ctx context.Context, addr string) error {
	_, err := zooKeeperMode(ctx, addr)
	return err
}

// zooKeeperMode returns the server's "Mode:" line of srvr: leader,
// follower or standalone. A server without a quorum answers that it is not
// serving requests, which is an error here.
func zooKeeperMode(ctx context.Context, addr string) (string, error) {
	out, err := fourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("%s not serving: %q", addr, strings.TrimSpace(out))
}

// anyRunning reports whether any of nodes has a process that has not
// exited: role followers stop once their servers are gone.
func anyRunning(nodes []*Node) bool {
	for _, n := range nodes {
		if p := n.Process(); p != nil {
			if exited, _ := p.Exited(); !exited {
				return true
			}
		}
	}
	return false
}
