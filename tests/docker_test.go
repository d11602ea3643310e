package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/cluster/container"
)

// The docker backend runs against the real engine: images built from
// this machine's binaries, containers on a network of the run's own, the
// same faults as local processes. Every test ends by checking that no
// container, network or volume of ours is left.

var buildImages sync.Once

// needImages builds the images once per test binary (the binaries and
// their libraries, FROM scratch: about 40 s for the five on 2 cores).
func needImages(t *testing.T) {
	t.Helper()
	buildImages.Do(func() {
		if r := locktest(t, "images", "build"); r.code != 0 {
			t.Fatalf("locktest images build: exit %d", r.code)
		}
	})
}

// dockerLeft lists the containers, networks and volumes that carry our
// run label.
func dockerLeft(t *testing.T) []string {
	t.Helper()
	var left []string
	for _, kind := range []string{"container", "network", "volume"} {
		args := []string{kind, "ls", "-q", "--filter", "label=" + container.LabelRun}
		if kind == "container" {
			args = []string{"ps", "-aq", "--filter", "label=" + container.LabelRun}
		}
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v: %s", args, err, out)
		}
		for _, id := range strings.Fields(string(out)) {
			left = append(left, kind+" "+id)
		}
	}
	return left
}

// assertNoDocker fails if anything of ours is left after grace (the
// watchdog needs a moment after its coordinator died).
func assertNoDocker(t *testing.T, grace time.Duration) {
	t.Helper()
	deadline := time.Now().Add(grace)
	for {
		left := dockerLeft(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDockerMissingImage: without its image a docker run is refused before
// anything starts, in one line that names the command to build it.
func TestDockerMissingImage(t *testing.T) {
	needImages(t)
	if out, err := exec.Command("docker", "image", "rm", "locktest/etcd:local").CombinedOutput(); err != nil {
		t.Fatalf("docker image rm: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if r := locktest(t, "images", "build", "etcd"); r.code != 0 {
			t.Errorf("rebuild the etcd image: exit %d", r.code)
		}
	})
	// Every registered image is checked for the binaries a run needs; the
	// etcd image stands for any: ask for it directly.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := container.CheckImages(ctx, []string{"redis-server", "etcd"})
	if err == nil || !strings.Contains(err.Error(), "locktest/etcd:local is missing") || !strings.Contains(err.Error(), "locktest images build") {
		t.Fatalf("CheckImages without the etcd image: %v", err)
	}
	if out, err := exec.Command("docker", "image", "rm", "locktest/redis:local").CombinedOutput(); err != nil {
		t.Fatalf("docker image rm: %v: %s", err, out)
	}
	r := locktest(t, "run", "--impl", "redis-single", "--duration", "1s", "--backend", "docker")
	rebuild := locktest(t, "images", "build", "redis")
	if r.code != 254 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 ||
		!strings.Contains(r.stderr, "locktest/redis:local is missing") || !strings.Contains(r.stderr, "locktest images build") {
		t.Fatalf("run without the image: exit %d, stderr %q; want 254 and one line naming `locktest images build`", r.code, r.stderr)
	}
	if rebuild.code != 0 {
		t.Fatalf("rebuild: exit %d", rebuild.code)
	}
	if entries, _ := os.ReadDir(r.store); len(entries) > 0 {
		t.Errorf("a refused run left %v in the store", entries)
	}
	// A rebuild replaces the image; the one it replaced is not left behind.
	if r := locktest(t, "images", "build", "redis"); r.code != 0 {
		t.Fatalf("second rebuild: exit %d", r.code)
	}
	dangling, err := exec.Command("docker", "images", "-q", "--filter", "dangling=true", "--filter", "label="+container.LabelImage).Output()
	if err != nil || strings.TrimSpace(string(dangling)) != "" {
		t.Errorf("untagged images of ours after rebuilds: %q (%v)", dangling, err)
	}
	assertNoDocker(t, 5*time.Second)
	r.assertNothingLeft(t)
}

// TestDockerCoreRows runs the quick suite's core scenarios (docs/anomalies.md row
// 1, 2 and 6) with every server in a container: the same expectations the
// local backend meets in CI must hold.
func TestDockerCoreRows(t *testing.T) {
	needImages(t)
	out := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	r := locktest(t, "suite", "run", "../suites/quick.yaml", "--backend", "docker", "--parallel", "1", "--out", out,
		"--run", "^(redis-single-pause-holder|redis-single-fenced-pause-holder|redis-replicated-failover)$")
	t.Logf("three scenarios on docker: %s", time.Since(start).Round(time.Second))
	if r.code != 0 {
		t.Fatalf("suite on docker: exit %d", r.code)
	}
	j := readJUnit(t, out)
	if n := len(j.Suites[0].Cases); n != 3 || j.Suites[0].Failures+j.Suites[0].Errors != 0 {
		t.Fatalf("junit: %d cases, %d failures, %d errors; want 3 passing", n, j.Suites[0].Failures, j.Suites[0].Errors)
	}
	// The servers really ran in containers: a process that is its
	// container's init has pid 1, which no local server has.
	logs, _ := filepath.Glob(filepath.Join(out, "runs", "*", "*", "*", "nodes", "*", "*.log"))
	if len(logs) < 2+6+2 { // single + resource, twice; 3 data + 3 sentinels + resource
		t.Fatalf("found %d node logs: %v", len(logs), logs)
	}
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "pid=1,") {
			t.Errorf("%s: the server did not run as its container's first process:\n%.400s", l, data)
		}
	}
	assertNoDocker(t, 5*time.Second)
	assertNothingLeft(t, out, binary)
}

// TestDockerNodeFaults drives one containerized Redis node through the
// fault primitives and checks each on the server itself: its clock moves
// (the LD_PRELOAD shim inside the container), a pause stops it answering,
// a kill ends it, a restart brings it back on the same address.
func TestDockerNodeFaults(t *testing.T) {
	needImages(t)
	c, err := cluster.NewOn(t.TempDir(), container.DockerBackend)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	shim, err := cluster.BuildClockShim(cluster.ShimCacheDir())
	if err != nil {
		t.Fatal(err)
	}
	c.UseClockShim(shim)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := c.StartRedis(ctx, "redis-0", cluster.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(n.Addr(), "127.") {
		t.Fatalf("containerized node on loopback: %s", n.Addr())
	}
	addr := n.Addr()
	rc := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1, DisableIdentity: true})
	defer rc.Close()
	serverNow := func() time.Time {
		tm, err := rc.Time(ctx).Result()
		if err != nil {
			t.Fatalf("TIME: %v", err)
		}
		return tm
	}
	if d := serverNow().Sub(time.Now()); d > 5*time.Second || d < -5*time.Second {
		t.Fatalf("server clock off by %v before any fault", d)
	}
	if err := n.Clock.SetOffset(time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := serverNow().Sub(time.Now()); d < 59*time.Minute {
		t.Fatalf("after a +1h clock fault the server is off by %v", d)
	}
	if err := n.Clock.SetOffset(0); err != nil {
		t.Fatal(err)
	}

	if err := n.Process().Pause(); err != nil {
		t.Fatal(err)
	}
	if !n.Process().Stopped() {
		t.Fatal("paused container not reported stopped")
	}
	if err := rc.Ping(ctx).Err(); err == nil {
		t.Fatal("a paused server answered PING")
	}
	if err := n.Process().Resume(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatalf("resumed server: %v", err)
	}

	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if exited, _ := n.Process().Exited(); !exited {
		t.Fatal("killed container still running")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Addr() != addr {
		t.Fatalf("restarted on %s, was %s", n.Addr(), addr)
	}
	// No persistence: a restarted node comes back empty, as a local one.
	if v, err := rc.Exists(ctx, "k").Result(); err != nil || v != 0 {
		t.Fatalf("after restart EXISTS k = %d, %v; want 0 (no persistence)", v, err)
	}
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	assertNoDocker(t, 5*time.Second)
}

// TestDockerCoordinatorDies: a coordinator stopped by Ctrl-C removes its
// containers itself; one killed with SIGKILL cannot, and its watchdog
// does; one killed together with its watchdog leaves them to the sweep
// at the start of the next docker run.
func TestDockerCoordinatorDies(t *testing.T) {
	needImages(t)
	for _, tc := range []struct {
		name     string
		kill     func(t *testing.T, cmd *exec.Cmd)
		swept    bool // only the next run removes them
		wantCode int
	}{
		{"interrupt", func(t *testing.T, cmd *exec.Cmd) { cmd.Process.Signal(os.Interrupt) }, false, 130},
		{"sigkill", func(t *testing.T, cmd *exec.Cmd) { cmd.Process.Kill() }, false, -1},
		{"sigkill-with-watchdog", func(t *testing.T, cmd *exec.Cmd) {
			for _, p := range ourProcesses(t, container.WatchdogCommand) {
				pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
				syscall.Kill(pid, syscall.SIGKILL)
			}
			cmd.Process.Kill()
		}, true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			cmd := exec.Command(binary, "run", "--impl", "redis-single", "--duration", "60s", "--backend", "docker", "--store", store)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Wait until the workload runs on the containers.
			deadline := time.Now().Add(60 * time.Second)
			for {
				hist, _ := os.ReadFile(filepath.Join(store, "latest", "history.jsonl"))
				if strings.Count(string(hist), `"ok"`) >= 5 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the run did not get going within 60 s")
				}
				time.Sleep(200 * time.Millisecond)
			}
			if n := len(dockerLeft(t)); n < 3 {
				t.Fatalf("want 2 containers and a network while running, found %d", n)
			}
			tc.kill(t, cmd)
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if code != tc.wantCode {
				t.Fatalf("coordinator ended with %v (code %d), want %d", err, code, tc.wantCode)
			}
			if tc.swept {
				time.Sleep(2 * time.Second)
				if len(dockerLeft(t)) == 0 {
					t.Fatal("nothing left with coordinator and watchdog killed: the sweep is not what removed it")
				}
				r := locktestIn(t, filepath.Join(t.TempDir(), "store"), "run", "--impl", "redis-single", "--duration", "1s", "--backend", "docker")
				if r.code != 0 {
					t.Fatalf("next run: exit %d", r.code)
				}
			}
			assertNoDocker(t, 15*time.Second)
			assertNothingLeft(t, store, binary)
		})
	}
}

// TestDockerOtherServers runs the ZooKeeper ensemble and the PostgreSQL
// server in containers. ZooKeeper's peers reach each other through the
// coordinator's links, which listen on the run's network; PostgreSQL runs
// as the postgres user (initdb on the host, into the node's directory).
// The outcomes are those of the local backend: the fenced ZooKeeper lock
// keeps the data safe while two clients believed they held it (row 16), a
// killed holder keeps the SQL lock forever (row 17).
func TestDockerOtherServers(t *testing.T) {
	needImages(t)
	for _, tc := range []struct {
		impl, fault string
		want        []string // in the summary
		logFile     string   // a node log, and what shows the server ran in its container
		inLog       string
	}{
		{"zookeeper-fenced", "pause-holder", []string{"mutex    INVALID", "resource VALID"},
			"zk-0/zk-0.log", "binding to port /0.0.0.0:"},
		{"postgres-unique", "kill-holder", []string{"never"},
			"postgres-0/postgres-0.log", `listening on IPv4 address "0.0.0.0"`},
	} {
		t.Run(tc.impl, func(t *testing.T) {
			r := locktest(t, "run", "--impl", tc.impl, "--fault", tc.fault, "--duration", "8s", "--fault-interval", "2s", "--backend", "docker")
			if r.code != 0 {
				t.Fatalf("exit %d", r.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("summary lacks %q", w)
				}
			}
			data, err := os.ReadFile(filepath.Join(r.store, "latest", "nodes", tc.logFile))
			if err != nil || !strings.Contains(string(data), tc.inLog) {
				t.Errorf("%s lacks %q (%v):\n%.1500s", tc.logFile, tc.inLog, err, data)
			}
			assertNoDocker(t, 5*time.Second)
			r.assertNothingLeft(t)
		})
	}
}
