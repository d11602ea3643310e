package tests

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/cluster/remote"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// remoteLabEnv marks the test binary TestRemoteNodes re-runs inside a
// network namespace of its own, where the stand-in hosts are made.
const remoteLabEnv = "LOCKTEST_TEST_REMOTE_LAB"

// TestRemoteNodes runs locktest against stand-in hosts reached over SSH
// (--nodes): network namespaces of a lab, each with its own sshd on its
// own address. The lab's bridge must stay off the host, so the test runs
// again in a network namespace of its own (the way locktest run re-runs
// in its lab), and afterwards checks that nothing is left: no sshd, no
// server, no named namespace.
func TestRemoteNodes(t *testing.T) {
	if os.Getenv(remoteLabEnv) == "1" {
		remoteNodesInLab(t)
		return
	}
	if err := cluster.LabSupport(); err != nil {
		t.Fatalf("stand-in hosts are network namespaces: %v", err)
	}
	netnsBefore, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, netnsBefore)
	}
	work := filepath.Join(t.TempDir(), "locktest-remote")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// The same -run: a pattern that names subtests picks them there.
	run := "^TestRemoteNodes$"
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "/") {
		run = f.Value.String()
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), remoteLabEnv+"=1", cluster.LabEnv+"=1", testBinaryEnv+"="+binary, "LOCKTEST_TEST_WORK="+work)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		t.Errorf("the run in its own namespace: %v", err)
	}
	// The sshds' configuration and every server's directory are under
	// work: nothing may run from there once the namespace is gone.
	assertNothingLeft(t, work)
	netnsAfter, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil || string(netnsAfter) != string(netnsBefore) {
		t.Errorf("ip netns list before:\n%s\nafter (%v):\n%s", netnsBefore, err, netnsAfter)
	}
}

// standIns is a lab with sshd stand-in hosts.
type standIns struct {
	work       string
	ips        []string
	key        string // authorized on every host
	badKey     string // authorized nowhere
	knownHosts string
	sshDir     string // --ssh-dir: the hosts' run directories
	// sudoDir is the last stand-in's: its users' files and an --ssh-dir
	// they may write, where they may reach them (the test's own
	// directories are root's alone).
	sudoDir string
}

// The users of the last stand-in besides this machine's: one may run nft
// through sudo without a password, the other may not.
const (
	sudoUser  = "ltsudo"
	plainUser = "ltplain"
)

func (s standIns) sshArgs(key string) []string {
	return []string{"--ssh-user", "root", "--ssh-key", key, "--ssh-known-hosts", s.knownHosts, "--ssh-dir", s.sshDir}
}

func keygen(t *testing.T, path string) string {
	t.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "locktest-test", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(pub))
}

// startStandIns makes n hosts: a lab endpoint each, with an sshd listening
// on its address that lets root in with the test's key.
func startStandIns(t *testing.T, work string, n int) standIns {
	t.Helper()
	if err := cluster.StartLab(); err != nil {
		t.Fatal(err)
	}
	lab, err := cluster.NewLab()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	// The runs the test starts are runs like any: not in this lab.
	os.Unsetenv(cluster.LabEnv)
	// sshd's privilege separation directory, which its package's service
	// would make.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	s := standIns{work: work, key: filepath.Join(work, "id"), badKey: filepath.Join(work, "id-bad"),
		knownHosts: filepath.Join(work, "known_hosts"), sshDir: filepath.Join(work, "locktest-hosts")}
	pub := keygen(t, s.key)
	keygen(t, s.badKey)
	authorized := filepath.Join(work, "authorized_keys")
	if err := os.WriteFile(authorized, []byte(pub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var known []string
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		e, err := lab.Endpoint(name, false)
		if err != nil {
			t.Fatal(err)
		}
		ip := e.IP.String()
		hostKey := filepath.Join(work, name+"-hostkey")
		known = append(known, ip+" "+keygen(t, hostKey))
		conf := filepath.Join(work, name+"-sshd_config")
		lines := []string{"ListenAddress " + ip, "HostKey " + hostKey, "AuthorizedKeysFile " + authorized,
			"PermitRootLogin yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
			"StrictModes no", "PidFile none", "MaxSessions 100", "MaxStartups 100", "LogLevel ERROR"}
		if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		log, err := os.Create(filepath.Join(work, name+"-sshd.log"))
		if err != nil {
			t.Fatal(err)
		}
		spec := cluster.Spec{Name: name + "-sshd", Path: "/usr/sbin/sshd", Args: []string{"-D", "-e", "-f", conf}, Dir: work, Log: log, Net: e}
		if i == n-1 {
			// The last host has two users more, for the sudo path: its
			// sshd, and so all it runs, sees users' files of its own in
			// a mount namespace of its own.
			s.sudoDir = sudoStandIn(t, authorized, conf)
			spec.Args = append([]string{"--mount", "--propagation", "private", "sh", "-c",
				`for f in passwd group shadow sudoers; do mount --bind "$0/$f" /etc/$f || exit 1; done; exec "$@"`,
				s.sudoDir, spec.Path}, spec.Args...)
			spec.Path = "unshare"
		}
		if i == n-2 {
			// The host before lacks redis-server: its sshd, and so all it
			// runs, sees an empty file that is no program in its place,
			// in a mount namespace of its own.
			redis, err := exec.LookPath("redis-server")
			if err != nil {
				t.Fatal(err)
			}
			empty := filepath.Join(work, "not-a-program")
			if err := os.WriteFile(empty, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			spec.Args = append([]string{"--mount", "--propagation", "private", "sh", "-c",
				`mount --bind "$0" "$1" && shift && exec "$@"`, empty, redis, spec.Path}, spec.Args...)
			spec.Path = "unshare"
		}
		p, err := cluster.Start(spec)
		if err != nil {
			t.Fatalf("sshd of %s: %v", name, err)
		}
		t.Cleanup(func() {
			// sshd serves each connection in a session of its own, which
			// a signal to sshd's group does not reach: a connection still
			// open (a coordinator the test failed to end) ends here too.
			sessions := childrenOf(p.Pid())
			_ = p.Stop(2 * time.Second)
			for _, pid := range sessions {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			log.Close()
		})
		waitListening(t, net.JoinHostPort(ip, "22"))
		s.ips = append(s.ips, ip)
	}
	if err := os.WriteFile(s.knownHosts, []byte(strings.Join(known, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// sudoStandIn writes the last stand-in's users' files into a directory
// others may enter: this machine's passwd, group and shadow with
// sudoUser and plainUser added, a sudoers that lets sudoUser run nft
// alone, without a password, and their authorized keys (sshd reads them
// as the user). It points the host's sshd config at those keys and
// returns the directory; an --ssh-dir they may write is under it.
func sudoStandIn(t *testing.T, authorized, conf string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "locktest-sudo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "locktest-hosts"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "locktest-hosts"), 0o1777); err != nil {
		t.Fatal(err)
	}
	added := map[string]string{
		"passwd": fmt.Sprintf("%s:x:47110:47110::%s:/bin/sh\n%s:x:47111:47111::%s:/bin/sh\n", sudoUser, dir, plainUser, dir),
		"group":  fmt.Sprintf("%s:x:47110:\n%s:x:47111:\n", sudoUser, plainUser),
		"shadow": fmt.Sprintf("%s:*:20000:0:99999:7:::\n%s:*:20000:0:99999:7:::\n", sudoUser, plainUser),
	}
	for file, lines := range added {
		own, err := os.ReadFile("/etc/" + file)
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if file == "shadow" {
			mode = 0o640
		}
		if err := os.WriteFile(filepath.Join(dir, file), append(own, lines...), mode); err != nil {
			t.Fatal(err)
		}
	}
	sudoers := "Defaults secure_path=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\n" +
		"root ALL=(ALL:ALL) ALL\n" + sudoUser + " ALL=(root) NOPASSWD: /usr/sbin/nft\n"
	if err := os.WriteFile(filepath.Join(dir, "sudoers"), []byte(sudoers), 0o440); err != nil {
		t.Fatal(err)
	}
	keys, err := os.ReadFile(authorized)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), keys, 0o644); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	config = []byte(strings.ReplaceAll(string(config), "AuthorizedKeysFile "+authorized, "AuthorizedKeysFile "+filepath.Join(dir, "authorized_keys")))
	if err := os.WriteFile(conf, config, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd at %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// remoteNodesInLab is the test proper, in the namespace TestRemoteNodes
// made.
func remoteNodesInLab(t *testing.T) {
	work := os.Getenv("LOCKTEST_TEST_WORK")
	s := startStandIns(t, work, 7)
	unreachable := s.ips[0] + ":2222" // no SSH server listens there
	hosts := strings.Join(s.ips[:3], ",")
	five := strings.Join(s.ips[:5], ",")
	noRedis := s.ips[5]  // this stand-in lacks redis-server
	sudoHost := s.ips[6] // this one has users who are not root

	t.Run("bad-key", func(t *testing.T) {
		r := locktest(t, append([]string{"run", "--impl", "redis-single", "--nodes", hosts}, s.sshArgs(s.badKey)...)...)
		r.assertRefused(t, "user root is refused with the key given")
	})
	t.Run("unreachable", func(t *testing.T) {
		r := locktest(t, append([]string{"run", "--impl", "redis-single", "--nodes", s.ips[0] + "," + unreachable}, s.sshArgs(s.key)...)...)
		r.assertRefused(t, "cannot reach its SSH server at "+unreachable)
	})
	t.Run("unknown-host-key", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(other, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		r := locktest(t, "run", "--impl", "redis-single", "--nodes", s.ips[0], "--ssh-user", "root", "--ssh-key", s.key,
			"--ssh-known-hosts", other, "--ssh-dir", s.sshDir)
		r.assertRefused(t, "its host key is not in "+other)
	})
	t.Run("missing-program", func(t *testing.T) {
		r := locktest(t, append([]string{"run", "--impl", "redis-single", "--nodes", s.ips[0] + "," + noRedis}, s.sshArgs(s.key)...)...)
		r.assertRefused(t, "host "+noRedis+" has no redis-server")
	})

	// Row 6 (docs/anomalies.md), with the quick suite's settings: the
	// same verdict on the hosts as on this one.
	row6 := []string{"run", "--impl", "redis-replicated", "--fault", "failover", "--ttl", "2s", "--hold-min", "1500ms",
		"--hold-max", "1800ms", "--duration", "15s", "--fault-interval", "3s", "--seed", "1"}
	t.Run("failover", func(t *testing.T) {
		onHosts := locktest(t, append(append(append([]string{}, row6...), "--nodes", hosts), s.sshArgs(s.key)...)...)
		if onHosts.code != 1 {
			t.Fatalf("exit %d, want 1 (invalid)", onHosts.code)
		}
		res := onHosts.results(t)
		if res.Verdict != checker.Invalid || res.Checks.Mutex.Verdict != checker.Invalid {
			t.Fatalf("verdict %s, mutex %s: want both invalid (row 6)", res.Verdict, res.Checks.Mutex.Verdict)
		}
		if res.Network != "proxy" {
			t.Errorf("network %q, want proxy", res.Network)
		}
		// Each host's clock, measured at the start and at the end, bounds
		// how fast it ran, by which the lease is judged shorter.
		if len(res.ClockOffsets) != 6 {
			t.Errorf("clock offsets %+v: want 3 hosts × start, end", res.ClockOffsets)
		}
		if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, "ppm shorter: the hosts' clocks may have run") {
			t.Errorf("no note of the lease judged by the hosts' drift:\n%s", notes)
		}
		for _, o := range res.ClockOffsets {
			// One kernel, one clock: the offset is within the
			// uncertainty, give or take the time date takes to start.
			if o.Error != "" || o.UncertaintyNs <= 0 || abs(o.OffsetNs) > o.UncertaintyNs+int64(20*time.Millisecond) {
				t.Errorf("clock offset %+v: want measured, near 0", o)
			}
		}
		// The servers' memory and connections, read from /proc on their
		// hosts.
		if rs := res.Resources; rs == nil || len(rs.Unsampled) != 0 || len(rs.Procs) != 8 {
			t.Errorf("resources %+v: want the coordinator and the 7 servers sampled", rs)
		} else {
			for _, p := range rs.Procs {
				if p.FirstRSS <= 0 || p.LastRSS <= 0 {
					t.Errorf("%s: memory %d → %d bytes, want read", p.Name, p.FirstRSS, p.LastRSS)
				}
			}
		}
		// The servers ran on the hosts: their logs came back, and the
		// nodes were spread over the three hosts.
		log, err := os.ReadFile(filepath.Join(onHosts.store, "latest", "nodes", "redis-0", "redis-0.log"))
		if err != nil || !strings.Contains(string(log), "Ready to accept connections") {
			t.Errorf("redis-0's log (%v) lacks its start:\n%s", err, log)
		}
		// A run that ends by itself undoes everything it did on the hosts.
		onHosts.assertNothingLeft(t)
		assertNothingLeft(t, s.sshDir)
		left, err := remote.Pending(filepath.Join(onHosts.store, "latest"))
		if err != nil || len(left) != 0 {
			t.Errorf("undo list still has %+v (%v)", left, err)
		}
		if dirs, _ := os.ReadDir(s.sshDir); len(dirs) != 0 {
			t.Errorf("the hosts keep %d run directories under %s", len(dirs), s.sshDir)
		}
	})

	// Row 9: kill-node kills the server on its host and starts it again
	// in the same directory; without persistence it forgets the lock,
	// with an AOF synced on every write (kept in the host's directory
	// across the restart) it does not. A restart over SSH takes a second
	// or so here (a kill, a start, readiness polls: sessions each), so
	// the holds are longer than the quick suite's 1-1.5 s, which ended
	// before the server was back (measured: valid, the kill only
	// disturbing the clients).
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"kill-node", nil, 1},
		{"kill-node-persist", []string{"--persist"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--impl", "redis-single", "--fault", "kill-node", "--ttl", "10s", "--hold-min", "3s",
				"--hold-max", "3s", "--fault-duration", "200ms", "--duration", "12s", "--seed", "1", "--nodes", hosts}, tc.args...)
			r := locktest(t, append(args, s.sshArgs(s.key)...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			res := r.results(t)
			if len(res.Checks.Faults) == 0 {
				t.Fatal("no fault struck")
			}
			log, err := os.ReadFile(filepath.Join(r.store, "latest", "nodes", "redis-0", "redis-0.log"))
			if n := strings.Count(string(log), "Ready to accept connections"); err != nil || n < 2 {
				t.Errorf("redis-0's log (%v) shows %d starts, want the first and a restart per kill", err, n)
			}
			r.assertNothingLeft(t)
			assertNothingLeft(t, s.sshDir)
		})
	}

	// Row 11: a Redlock holder paused past its lease, with Redlock's five
	// servers on five hosts, one each (the resource joins the first).
	t.Run("redlock-pause-holder", func(t *testing.T) {
		r := locktest(t, append([]string{"run", "--impl", "redlock", "--fault", "pause-holder", "--duration", "10s", "--seed", "1",
			"--nodes", five}, s.sshArgs(s.key)...)...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1 (invalid)", r.code)
		}
		if res := r.results(t); res.Checks.Mutex.Verdict != checker.Invalid {
			t.Fatalf("mutex %s, want invalid (row 11)", res.Checks.Mutex.Verdict)
		}
		for i := range 5 {
			log, err := os.ReadFile(filepath.Join(r.store, "latest", "nodes", fmt.Sprintf("redis-%d", i), fmt.Sprintf("redis-%d.log", i)))
			if err != nil || !strings.Contains(string(log), "Ready to accept connections") {
				t.Errorf("redis-%d's log (%v) lacks its start", i, err)
			}
		}
		r.assertNothingLeft(t)
		assertNothingLeft(t, s.sshDir)
	})

	// Row 8: the Redlock holder cut from 2 of 5 nodes holds the other 3;
	// one of them jumps its clock ahead (the clock shim, copied to its
	// host, reads the offset file the fault writes there over SSH) and
	// expires the key, and another client takes a majority.
	t.Run("redlock-clock-jump", func(t *testing.T) {
		r := locktest(t, append([]string{"run", "--impl", "redlock", "--fault", "redlock-clock-jump", "--hold-min", "300ms",
			"--hold-max", "500ms", "--duration", "24s", "--fault-interval", "3s", "--stop-on-violation", "mutex", "--seed", "1",
			"--nodes", five}, s.sshArgs(s.key)...)...)
		if r.code != 1 {
			logs, _ := filepath.Glob(filepath.Join(r.store, "*", "*", "nodes", "*", "*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, data)
			}
			t.Fatalf("exit %d, want 1 (invalid)", r.code)
		}
		if res := r.results(t); res.Checks.Mutex.Verdict != checker.Invalid {
			t.Fatalf("mutex %s, want invalid (row 8)", res.Checks.Mutex.Verdict)
		}
		r.assertNothingLeft(t)
		assertNothingLeft(t, s.sshDir)
	})

	// --network firewall: a partition is rules in the firewall of the
	// server's host (nft over SSH), for the server's port: the clients'
	// calls go unanswered while the host's sshd, the run's own
	// connection, is spared.
	t.Run("firewall-partition", func(t *testing.T) {
		// The hosts from a file, as many hosts are kept.
		// The first, the lock's host, reached as a user who runs nft
		// through sudo; a user who may not is refused.
		file := filepath.Join(t.TempDir(), "hosts")
		lines := "# stand-ins\n" + sudoUser + "@" + sudoHost + "\n" + strings.Join(s.ips[1:3], "\n") + "\n"
		if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		sshDir := filepath.Join(s.sudoDir, "locktest-hosts")
		ssh := []string{"--ssh-user", "root", "--ssh-key", s.key, "--ssh-known-hosts", s.knownHosts, "--ssh-dir", sshDir}
		plain := locktest(t, append([]string{"run", "--impl", "redis-single", "--fault", "partition", "--network", "firewall",
			"--nodes", plainUser + "@" + sudoHost}, ssh...)...)
		plain.assertRefused(t, "host "+sudoHost+": user "+plainUser+" cannot change its firewall")
		r := locktest(t, append([]string{"run", "--impl", "redis-single", "--fault", "partition", "--network", "firewall",
			"--duration", "12s", "--seed", "1", "--nodes", "@" + file}, ssh...)...)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0 (a partition of one node is safe for redis-single)", r.code)
		}
		if res := r.results(t); res.Network != "firewall" {
			t.Errorf("network %q, want firewall", res.Network)
		}
		// The run keeps the hosts themselves, which heal needs.
		if conf, err := os.ReadFile(filepath.Join(r.store, "latest", "config.json")); err != nil ||
			!strings.Contains(string(conf), `"`+s.ips[2]+`"`) || strings.Contains(string(conf), `"@`) {
			t.Errorf("config.json (%v) does not name the file's hosts:\n%s", err, conf)
		}
		recs, err := history.ReadFile(filepath.Join(r.store, "latest", reports.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		strikes := history.Faults(recs)
		if len(strikes) == 0 {
			t.Fatal("no partition struck")
		}
		unanswered := 0
		for _, op := range history.Ops(recs) {
			if op.F != history.FAcquire && op.F != history.FRelease {
				continue // the resource's host is not cut
			}
			for _, f := range strikes {
				switch {
				case op.Outcome == history.OK && op.Call > f.Start && op.Return < f.Stop:
					t.Errorf("c%d's %s called at %d and answered at %d, inside the partition %d–%d", op.Process, op.F, op.Call, op.Return, f.Start, f.Stop)
				case op.Outcome != history.OK && op.Call < f.Stop && op.Completed > f.Start:
					unanswered++
				}
			}
		}
		if unanswered == 0 {
			t.Error("no call to the lock failed or timed out during a partition: the rules cut nothing")
		}
		r.assertNothingLeft(t)
		assertNothingLeft(t, sshDir)
		assertNoTables(t, s)
	})

	// Between servers: etcd's leader cut from its peers by rules on its
	// host loses its leadership to a new election; packet loss, which
	// only the kernel makes, picks the hosts' firewalls by itself.
	t.Run("firewall-peers-loss", func(t *testing.T) {
		r := locktest(t, append([]string{"run", "--impl", "etcd", "--fault", "partition", "--fault-target", "leader/peers",
			"--network", "firewall", "--duration", "10s", "--seed", "1", "--nodes", hosts}, s.sshArgs(s.key)...)...)
		// Valid or not: a lease may run out while its holder is cut off
		// (docs/measurements.md); what is asserted is the cut.
		if r.code != 0 && r.code != 1 {
			t.Fatalf("exit %d, want a verdict", r.code)
		}
		logs, _ := filepath.Glob(filepath.Join(r.store, "latest", "nodes", "etcd-*", "etcd-*.log"))
		elected := 0
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			elected += strings.Count(string(data), "became leader at term")
		}
		if len(logs) != 3 || elected < 2 {
			t.Errorf("%d etcd logs, %d elections: want 3 logs, the first election and another once the leader was cut from its peers", len(logs), elected)
		}
		r = locktest(t, append([]string{"run", "--impl", "redis-single", "--fault", "loss", "--loss", "0.5", "--duration", "8s",
			"--seed", "1", "--nodes", hosts}, s.sshArgs(s.key)...)...)
		if r.code != 0 {
			t.Fatalf("loss: exit %d, want 0", r.code)
		}
		if res := r.results(t); res.Network != "firewall" || len(res.Checks.Faults) == 0 {
			t.Errorf("loss: network %q with %d strikes, want firewall (the only network that makes it) and a strike", res.Network, len(res.Checks.Faults))
		}
		r = locktest(t, append([]string{"run", "--impl", "redis-single", "--fault", "loss", "--network", "proxy", "--nodes", hosts}, s.sshArgs(s.key)...)...)
		r.assertRefused(t, "needs the kernel's network: with --nodes, --network firewall")
		r = locktest(t, append([]string{"run", "--impl", "redis-single", "--fault", "partition", "--fault-target", "holder",
			"--network", "firewall", "--nodes", hosts}, s.sshArgs(s.key)...)...)
		r.assertRefused(t, "the clients share this host's address")
		assertNothingLeft(t, s.sshDir)
		assertNoTables(t, s)
	})

	// The designs whose servers run as a user of their own: initdb and
	// mariadb-install-db run on the server's host over SSH, and the
	// servers there, reached as root, as postgres and mysql (each refuses
	// root, so a run that gets a verdict had them switch), PostgreSQL's in
	// an IPC namespace of its own, whose segments die with it; reached as
	// another user, as that user. The verdicts are
	// the local ones (TestDatabaseLocks): session locks lost to a server
	// killed and started again in its directory under a holder.
	t.Run("databases", func(t *testing.T) {
		segments := postgresSegments(t)
		atGrant := []string{"--fault", "kill-node", "--fault-moment", "grant", "--hold-min", "3s", "--hold-max", "3s",
			"--fault-duration", "1s", "--duration", "8s", "--seed", "1"}
		// PostgreSQL's host is reached as a user who is not root, who
		// runs it as itself.
		asUser := []string{"--nodes", sudoUser + "@" + sudoHost + "," + strings.Join(s.ips[1:3], ","), "--ssh-user", "root",
			"--ssh-key", s.key, "--ssh-known-hosts", s.knownHosts, "--ssh-dir", filepath.Join(s.sudoDir, "locktest-hosts")}
		for _, tc := range []struct {
			impl   string
			hosts  []string
			server string // the node whose restarts the log shows
			ready  string // its log line of each start
		}{
			{"postgres-advisory", asUser, "postgres-0", "database system is ready to accept connections"},
			{"mariadb-getlock", append([]string{"--nodes", hosts}, s.sshArgs(s.key)...), "mariadb-0", "ready for connections"},
		} {
			r := locktest(t, append(append([]string{"run", "--impl", tc.impl}, atGrant...), tc.hosts...)...)
			if r.code != 1 {
				logs, _ := filepath.Glob(filepath.Join(r.store, "*", "*", "nodes", "*", "*.log"))
				for _, l := range logs {
					data, _ := os.ReadFile(l)
					t.Logf("%s:\n%s", l, data)
				}
				t.Fatalf("%s: exit %d, want 1 (invalid)", tc.impl, r.code)
			}
			if res := r.results(t); res.Checks.Mutex.Verdict != checker.Invalid {
				t.Errorf("%s: mutex %s, want invalid", tc.impl, res.Checks.Mutex.Verdict)
			}
			log, err := os.ReadFile(filepath.Join(r.store, "latest", "nodes", tc.server, tc.server+".log"))
			if n := strings.Count(string(log), tc.ready); err != nil || n < 2 {
				t.Errorf("%s's log (%v) shows %d starts, want the first and a restart per kill", tc.server, err, n)
			}
			r.assertNothingLeft(t)
			assertNothingLeft(t, s.sshDir, s.sudoDir)
		}
		// A coordinator SIGKILLed while PostgreSQL and a PgBouncer serve:
		// heal kills them, and the postmaster's interlock segment dies
		// with its namespace.
		store := filepath.Join(t.TempDir(), "store")
		cmd := exec.Command(binary, append([]string{"run", "--impl", "postgres-advisory-pgbouncer", "--duration", "2m", "--store", store,
			"--nodes", hosts}, s.sshArgs(s.key)...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitForFile(t, filepath.Join(store, "latest", "history.jsonl"), `"type":"ok","f":"acquire"`)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		run, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		if r := locktest(t, "heal", "--dir", run); r.code != 0 || strings.Count(r.stdout, "killed ") != 3 {
			t.Errorf("heal: exit %d, want 0 with 3 servers killed (postgres, pgbouncer, the resource):\n%s%s", r.code, r.stdout, r.stderr)
		}
		assertNothingLeft(t, s.sshDir, store)
		if after := postgresSegments(t); after != segments {
			t.Errorf("System V shared memory segments of postgres: %d before the runs, %d after", segments, after)
		}
	})

	// Ctrl-C is an exit path like any other: everything on the hosts is
	// undone before locktest exits.
	t.Run("interrupt", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		cmd := exec.Command(binary, append([]string{"run", "--impl", "redis-single", "--fault", "pause-node", "--duration", "2m",
			"--store", store, "--nodes", hosts}, s.sshArgs(s.key)...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitForFile(t, filepath.Join(store, "latest", "history.jsonl"), `"fault-start"`)
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		var exit *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Fatalf("interrupted run: %v, want exit 130", err)
		}
		assertNothingLeft(t, s.sshDir, store)
		left, err := remote.Pending(filepath.Join(store, "latest"))
		if err != nil || len(left) != 0 {
			t.Errorf("undo list still has %+v (%v)", left, err)
		}
	})

	// Your own server on a host (--servers with --server-pids and
	// --nodes): paused and continued there by its pid, never killed; a
	// coordinator SIGKILLed while it is stopped leaves it running (its
	// guard session ends with the connection), and heal continues it too.
	t.Run("your-servers", func(t *testing.T) {
		host := s.ips[1]
		addr, pid := startOwnRedis(t, s, host)
		base := append([]string{"run", "--impl", "redis-single", "--servers", addr, "--server-pids", strconv.Itoa(pid),
			"--nodes", host, "--fault", "pause-node", "--fault-interval", "1s"}, s.sshArgs(s.key)...)
		r := locktest(t, append(base, "--duration", "6s", "--fault-duration", "1s")...)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("exit %d, want a verdict", r.code)
		}
		res := r.results(t)
		if len(res.Checks.Faults) == 0 {
			t.Fatal("no pause-node strike")
		}
		for _, f := range res.Checks.Faults {
			if f.Target != "server-0" {
				t.Errorf("pause-node on %s, want your server (server-0)", f.Target)
			}
		}
		run, err := filepath.EvalSymlinks(filepath.Join(r.store, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		undo, err := os.ReadFile(filepath.Join(run, remote.UndoFile))
		if err != nil {
			t.Fatal(err)
		}
		if paused, continued := strings.Count(string(undo), `"do":"cont","pid"`), strings.Count(string(undo), `"undone":true`); paused == 0 {
			t.Errorf("no pause of your server recorded:\n%s", undo)
		} else if pending, _ := remote.Pending(run); len(pending) != 0 {
			t.Errorf("%d pauses and %d undoings recorded, %+v still to undo", paused, continued, pending)
		}
		assertRunning(t, pid, addr)

		// A pause of 2 minutes, the coordinator killed in it.
		store := filepath.Join(t.TempDir(), "store")
		cmd := exec.Command(binary, append(base, "--duration", "2m", "--fault-duration", "2m", "--store", store)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitForFile(t, filepath.Join(store, "latest", "history.jsonl"), `"fault-start"`)
		if st := cluster.ProcState(pid); st != "T" {
			t.Fatalf("your server's state is %q in the pause, want T (stopped)", st)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for cluster.ProcState(pid) == "T" && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		assertRunning(t, pid, addr)
		run, err = filepath.EvalSymlinks(filepath.Join(store, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		h := locktest(t, "heal", "--dir", run)
		if h.code != 0 || !strings.Contains(h.stdout, "continued your server server-0 (pid "+strconv.Itoa(pid)+") if still stopped") ||
			strings.Contains(h.stdout, "killed server-0") {
			t.Fatalf("heal: exit %d, want 0 and your server continued, not killed:\n%s%s", h.code, h.stdout, h.stderr)
		}
		assertRunning(t, pid, addr)
		assertNothingLeft(t, s.sshDir, store)

		// Refused before anything starts: a pid that is not the server's,
		// a server on no host of --nodes, no pid.
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--servers", addr, "--server-pids", strconv.Itoa(os.Getpid()), "--nodes", host}, "does not listen on " + addr},
			{[]string{"--servers", addr, "--server-pids", strconv.Itoa(pid), "--nodes", s.ips[2]}, "is none of the hosts of --nodes"},
			{[]string{"--servers", addr, "--nodes", host}, "give --server-pids"},
			{[]string{"--servers", addr, "--server-pids", strconv.Itoa(pid), "--nodes", host, "--network", "firewall"}, "--network firewall with --servers"},
		} {
			r := locktest(t, append(append([]string{"run", "--impl", "redis-single", "--fault", "pause-node"}, tc.args...), s.sshArgs(s.key)...)...)
			r.assertRefused(t, tc.want)
		}
	})

	t.Run("heal-after-sigkill", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		args := append([]string{"run", "--impl", "redis-replicated", "--fault", "partition", "--network", "firewall", "--fault-interval", "1s",
			"--fault-duration", "2m", "--duration", "2m", "--store", store, "--nodes", hosts}, s.sshArgs(s.key)...)
		cmd := exec.Command(binary, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitForFile(t, filepath.Join(store, "latest", "history.jsonl"), `"fault-start"`)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		// Nothing on another host dies with the coordinator.
		if left := ourProcesses(t, s.sshDir); len(left) < 7 {
			t.Fatalf("after the SIGKILL %d servers run on the hosts, want the run's 7 (3 redis, 3 sentinels, the resource):\n%s",
				len(left), strings.Join(left, "\n"))
		}
		run, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		if tables := hostTables(t, s); len(tables) != 1 {
			t.Errorf("after the SIGKILL the hosts have tables %q, want the partition's one", tables)
		}
		r := locktest(t, "heal", "--dir", run)
		if r.code != 0 || strings.Count(r.stdout, "killed ") != 7 || strings.Count(r.stdout, "removed ") != 3 ||
			strings.Count(r.stdout, "deleted the firewall table") != 1 {
			t.Fatalf("heal: exit %d, want 0 with 7 servers killed, 1 firewall table deleted and 3 directories removed:\n%s%s", r.code, r.stdout, r.stderr)
		}
		assertNoTables(t, s)
		assertNothingLeft(t, s.sshDir, store)
		if dirs, _ := os.ReadDir(s.sshDir); len(dirs) != 0 {
			t.Errorf("the hosts keep %d run directories under %s after heal", len(dirs), s.sshDir)
		}
		r = locktest(t, "heal", "--dir", run)
		if r.code != 0 || !strings.Contains(r.stdout, "nothing left to undo") {
			t.Errorf("heal again: exit %d, want 0 saying nothing is left:\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = locktest(t, "heal", "--dir", t.TempDir())
		if r.code != 254 || !strings.Contains(r.stderr, "no undo list") {
			t.Errorf("heal of no run: exit %d, want 254 saying there is no undo list:\n%s", r.code, r.stderr)
		}
	})
}

// hostTables lists the nftables tables of every stand-in host, asked
// over SSH as a user would.
func hostTables(t *testing.T, s standIns) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hosts, err := remote.Dial(ctx, remote.Options{Hosts: s.ips, User: "root", KeyFile: s.key, KnownHosts: s.knownHosts})
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, h := range hosts {
		out, err := h.Run(ctx, "nft list tables", nil)
		if err != nil {
			t.Errorf("nft list tables on %s: %v", h.Name, err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				tables = append(tables, h.Name+": "+l)
			}
		}
		h.Close()
	}
	return tables
}

// assertNoTables checks that no run left a firewall table on a host.
func assertNoTables(t *testing.T, s standIns) {
	t.Helper()
	if tables := hostTables(t, s); len(tables) != 0 {
		t.Errorf("the hosts keep firewall tables: %q", tables)
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if child, err := strconv.Atoi(e.Name()); err == nil {
			if parent, ok := cluster.ParentOf(child); ok && parent == pid {
				out = append(out, child)
			}
		}
	}
	return out
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// waitForFile waits until the file at path holds want.
func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(data), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q (%v)", path, want, errors.Join(err))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startOwnRedis starts a redis-server on host as its user would, not as
// locktest does, and stops it when the test ends; it returns its address
// and pid.
func startOwnRedis(t *testing.T, s standIns, host string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hosts, err := remote.Dial(ctx, remote.Options{Hosts: []string{host}, User: "root", KeyFile: s.key, KnownHosts: s.knownHosts})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts[0].Close()
	const port = "16390"
	out, err := hosts[0].Run(ctx, "cd "+remote.Quote(t.TempDir())+` && setsid redis-server --port `+port+` --bind 0.0.0.0 --protected-mode no --save '' --appendonly no </dev/null >redis.out 2>&1 & echo $!`, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	})
	addr := net.JoinHostPort(host, port)
	waitListening(t, addr)
	return addr, pid
}

// assertRunning checks that the user's server at addr is process pid,
// running (not stopped), and answers.
func assertRunning(t *testing.T, pid int, addr string) {
	t.Helper()
	if st := cluster.ProcState(pid); st == "" || st == "T" || st == "Z" {
		t.Fatalf("your server (pid %d) is in state %q, want running", pid, st)
	}
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("your server at %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("your server at %s answered %q, %v to PING", addr, buf[:n], err)
	}
}

// postgresSegments counts the System V shared memory segments of the user
// postgres on this machine, which the stand-in hosts share: a killed
// postmaster's interlock segment outlives it unless its IPC namespace is
// its own. (Every other PostgreSQL of the tests as root has its own too.)
func postgresSegments(t *testing.T) int {
	t.Helper()
	u, err := user.Lookup(cluster.PostgresOSUser)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n")[1:] {
		// key shmid perms size cpid lpid nattch uid …
		if f := strings.Fields(l); len(f) > 7 && f[7] == u.Uid {
			n++
		}
	}
	return n
}
