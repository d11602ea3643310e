package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/reports"
)

// usersRedis is a redis-server the test starts, as a user would start
// theirs: locktest is only told its address (and pid). canary is data of
// the user's that a run must leave alone.
type usersRedis struct {
	addr string
	pid  int
	rdb  *redis.Client
}

const canaryKey, canaryValue = "users-own-key", "must survive every run"

func startUsersRedis(t *testing.T) *usersRedis {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir())
	// The test's own server must not outlive the test, whatever happens.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	u := &usersRedis{addr: fmt.Sprintf("127.0.0.1:%d", port), pid: cmd.Process.Pid}
	u.rdb = redis.NewClient(&redis.Options{Addr: u.addr, DialTimeout: time.Second, ReadTimeout: time.Second})
	t.Cleanup(func() { u.rdb.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for u.rdb.Set(context.Background(), canaryKey, canaryValue, 0).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the test's redis-server did not answer within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return u
}

// state is the process state letter of the server (R, S, T, …).
func (u *usersRedis) state(t *testing.T) string {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", u.pid))
	if err != nil {
		t.Fatalf("the user's redis-server is gone: %v", err)
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return s[i+2 : i+3]
}

// assertUntouched: the server runs (not stopped: a pause was healed),
// answers, and still has the user's data.
func (u *usersRedis) assertUntouched(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for u.state(t) == "T" {
		if time.Now().After(deadline) {
			t.Fatalf("the user's redis-server (pid %d) was left stopped", u.pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	v, err := u.rdb.Get(context.Background(), canaryKey).Result()
	if err != nil || v != canaryValue {
		t.Fatalf("the user's data: %q, %v; want %q", v, err, canaryValue)
	}
}

// assertStartedNoLockServer: locktest ran the resource of the run, and
// nothing in the place of the user's server.
func assertStartedNoLockServer(t *testing.T, r result) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(r.store, "latest", reports.NodeLogsDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "resource" {
			t.Errorf("locktest started a server of its own: %s", e.Name())
		}
	}
}

// TestUserServers: a lock tested against a server the user runs, which
// locktest reaches and faults but never starts or stops. The single-Redis
// lock loses updates under pause-holder (docs/anomalies.md row 1) on the
// user's server as on its own; a partition cuts the links to the user's
// server; pause-node stops and continues it by its pid; the exec design
// takes it as its node.
func TestUserServers(t *testing.T) {
	u := startUsersRedis(t)
	base := []string{"run", "--workload", "counter", "--clients", "5", "--duration", "8s", "--seed", "1", "--fault-interval", "2s"}
	cases := []struct {
		name  string
		args  []string
		code  int // -1: 0 or 1, the verdict is not asserted
		fault string
	}{
		{"pause-holder", []string{"--impl", "redis-single", "--servers", u.addr, "--fault", "pause-holder"}, 1, "pause-holder"},
		{"partition", []string{"--impl", "redis-single", "--servers", u.addr, "--fault", "partition"}, -1, "partition"},
		{"pause-node", []string{"--impl", "redis-single", "--servers", u.addr, "--server-pids", strconv.Itoa(u.pid),
			"--fault", "pause-node"}, -1, "pause-node"},
		{"exec", []string{"--impl", "exec", "--exec-cmd", "python3 " + filepath.Join(protocolDir, "redislock.py"),
			"--servers", u.addr, "--fault", "pause-holder"}, 1, "pause-holder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := locktest(t, append(slices.Clone(base), tc.args...)...)
			assertNothingLeft(t, r.store, protocolDir, "locktest-guard")
			u.assertUntouched(t)
			if (tc.code >= 0 && r.code != tc.code) || (tc.code < 0 && r.code != 0 && r.code != 1) {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			assertStartedNoLockServer(t, r)
			res := r.results(t)
			if tc.code == 1 && (res.Checks.Resource.Verdict != checker.Invalid || res.Checks.Stats.Lost == 0) {
				t.Errorf("resource check %s with %d lost updates, want invalid with some lost", res.Checks.Resource.Verdict, res.Checks.Stats.Lost)
			}
			var hit []string
			for _, f := range res.Checks.Faults {
				if f.Name == tc.fault {
					hit = append(hit, f.Target)
				}
			}
			if len(hit) == 0 {
				t.Fatalf("no %s fault happened", tc.fault)
			}
			if tc.fault != "pause-holder" && !strings.Contains(strings.Join(hit, " "), "server-0") {
				t.Errorf("%s hit %v, not the user's server (server-0)", tc.fault, hit)
			}
			if !strings.Contains(strings.Join(res.Notes, "\n"), "the lock servers were yours (--servers "+u.addr+")") {
				t.Errorf("the results do not say the servers were the user's: %v", res.Notes)
			}
			if len(res.Servers) > 0 {
				t.Errorf("results claim server versions of a run whose lock server was the user's: %v", res.Servers)
			}
			cfg, err := os.ReadFile(filepath.Join(r.store, "latest", "config.json"))
			if err != nil || !strings.Contains(string(cfg), `"servers": [`) || !strings.Contains(string(cfg), "--servers "+u.addr) {
				t.Errorf("config.json does not record the servers and the command that gives them: %v\n%s", err, cfg)
			}
		})
	}
}

// TestUserServerPauseHealedOnExit: a run interrupted (SIGINT) or killed
// (SIGKILL) while it has the user's server stopped leaves it running: the
// coordinator continues it, or, when it cannot run any more code, its
// guard does.
func TestUserServerPauseHealedOnExit(t *testing.T) {
	u := startUsersRedis(t)
	args := []string{"run", "--impl", "redis-single", "--servers", u.addr, "--server-pids", strconv.Itoa(u.pid),
		"--fault", "pause-node", "--fault-interval", "500ms", "--fault-duration", "20s", "--duration", "60s"}
	paused := func(dir string) bool {
		data, _ := os.ReadFile(filepath.Join(dir, reports.HistoryFile))
		return strings.Contains(string(data), `"fault-start"`) && u.state(t) == "T"
	}
	t.Run("SIGINT", func(t *testing.T) {
		interrupt(t, filepath.Join(t.TempDir(), "store"), paused, args...)
		u.assertUntouched(t)
	})
	t.Run("SIGKILL", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		cmd := exec.Command(binary, append(args, "--store", store)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		deadline := time.Now().Add(30 * time.Second)
		for !paused(filepath.Join(store, "latest")) {
			if time.Now().After(deadline) {
				t.Fatal("the server was not paused within 30 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		u.assertUntouched(t)
		assertNothingLeft(t, store, "locktest-guard")
	})
}

// TestUserServersBadInput: what cannot work against the user's servers is
// refused before anything starts: one line, exit 254, no store, and the
// user's server running with its data.
func TestUserServersBadInput(t *testing.T) {
	u := startUsersRedis(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	closed.Close()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(u.pid)
	// An unrelated process of the user's, which a pause must never stop in
	// place of the server.
	sleep := exec.Command("sleep", "60")
	sleep.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleep.Process.Kill()
		_ = sleep.Wait()
	})
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--impl", "redis-single", "--servers", "localhost"}, "--servers localhost: not host:port"},
		{[]string{"--impl", "redis-single", "--servers", "127.0.0.1:99999"}, "port from 1 to 65535"},
		{[]string{"--impl", "redis-single", "--servers", nobody}, "cannot connect within 2s"},
		{[]string{"--impl", "redlock", "--servers", u.addr}, "impl redlock runs on 5 server(s), 1 given"},
		{[]string{"--impl", "redis-replicated", "--servers", u.addr + "," + nobody + ",127.0.0.1:1"}, "cannot run on servers you run"},
		{[]string{"--impl", "redis-single", "--servers", u.addr, "--fault", "pause-node"}, "fault pause-node stops server processes (SIGSTOP): give your servers' pids"},
		{[]string{"--impl", "redis-single", "--servers", u.addr, "--server-pids", pid, "--fault", "kill-node"}, "fault kill-node needs servers locktest starts"},
		{[]string{"--impl", "redis-single", "--servers", u.addr, "--server-pids", pid, "--fault", "clock-bump"}, "fault clock-bump needs servers locktest starts"},
		{[]string{"--impl", "redis-single", "--servers", u.addr, "--server-pids", pid + ",4242"}, "2 pid(s) for 1 server(s)"},
		{[]string{"--impl", "redis-single", "--servers", u.addr, "--server-pids", strconv.Itoa(gone.Process.Pid)}, "no such process"},
		{[]string{"--impl", "redis-single", "--servers", u.addr, "--server-pids", strconv.Itoa(sleep.Process.Pid), "--fault", "pause-node"},
			"--server-pids " + strconv.Itoa(sleep.Process.Pid) + ": process " + strconv.Itoa(sleep.Process.Pid) + ` ("sleep") does not listen on ` + u.addr},
		{[]string{"--impl", "redis-single", "--server-pids", pid}, "--server-pids needs --servers"},
		{[]string{"--impl", "redis-single", "--servers", u.addr, "--server-pids", "redis"}, "--server-pids: redis is no server's process id"},
		{[]string{"--impl", "exec", "--exec-cmd", "python3 x.py", "--exec-servers", "redlock", "--servers", u.addr}, "impl exec runs on 5 server(s), 1 given"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			locktest(t, append([]string{"run", "--duration", "2s"}, tc.args...)...).assertRefused(t, tc.want)
			u.assertUntouched(t)
		})
	}
}
