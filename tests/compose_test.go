package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locktest/locktest/cluster"
)

// composeProject runs docker-compose on the repository's
// docker-compose.yml under a project name of the test's own, so that a
// user's topology on this machine is not touched, with env added to the
// environment. It is brought down (volumes included) when the test ends,
// and must then leave nothing behind.
type composeProject struct {
	t    *testing.T
	name string
	env  []string
}

func newComposeProject(t *testing.T, env ...string) *composeProject {
	t.Helper()
	needImages(t) // the images hold this test's locktest
	p := &composeProject{t: t, name: fmt.Sprintf("locktest-%s-%d", strings.ToLower(t.Name()), os.Getpid()), env: env}
	t.Cleanup(p.down)
	return p
}

func (p *composeProject) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", p.name}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), p.env...)
	return cmd
}

// run runs docker-compose with args, failing the test on an error.
func (p *composeProject) run(timeout time.Duration, args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := p.cmd(ctx, args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// down removes the project and checks that none of its containers,
// networks or volumes is left.
func (p *composeProject) down() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	msg, err := p.cmd(ctx, "down", "-v", "--remove-orphans").CombinedOutput()
	if err != nil && strings.Contains(string(msg), "active endpoints") {
		// The engine's race: the containers were removed but their
		// endpoints are counted a moment longer. A second down, as a user
		// would type, removes the network; anything else still fails.
		p.t.Logf("docker-compose down: %v: %s; once more", err, msg)
		time.Sleep(time.Second)
		msg, err = p.cmd(ctx, "down", "-v", "--remove-orphans").CombinedOutput()
	}
	if err != nil {
		p.t.Errorf("docker-compose down: %v: %s", err, msg)
	}
	for _, kind := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
		left, err := exec.Command("docker", append(kind, "--filter", "label=com.docker.compose.project="+p.name)...).Output()
		if err != nil {
			p.t.Errorf("docker %v: %v", kind, err)
		}
		if s := strings.TrimSpace(string(left)); s != "" {
			p.t.Errorf("docker %v: left after down: %s", kind, s)
		}
	}
	assertNoDocker(p.t, 5*time.Second)
}

// states describes each service's container: "status health
// port/tcp=host-ip:host-port…".
func (p *composeProject) states() map[string]string {
	p.t.Helper()
	ids := strings.Fields(p.run(30*time.Second, "ps", "-q"))
	format := `{{index .Config.Labels "com.docker.compose.service"}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}` +
		`{{range $p, $b := .NetworkSettings.Ports}} {{$p}}={{range $i, $h := $b}}{{if $i}},{{end}}{{$h.HostIp}}:{{$h.HostPort}}{{end}}{{end}}`
	out, err := exec.Command("docker", append([]string{"inspect", "-f", format}, ids...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("docker inspect: %v: %s", err, out)
	}
	states := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		service, state, _ := strings.Cut(line, " ")
		states[service] = state
	}
	return states
}

// container is the id of the service's container.
func (p *composeProject) container(service string) string {
	p.t.Helper()
	id := strings.TrimSpace(p.run(30*time.Second, "ps", "-q", service))
	if id == "" {
		p.t.Fatalf("no container for service %s", service)
	}
	return id
}

// inspect formats the container of service with a docker inspect template.
func (p *composeProject) inspect(service, format string) string {
	p.t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", format, p.container(service)).CombinedOutput()
	if err != nil {
		p.t.Fatalf("docker inspect %s: %v: %s", service, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestDockerComposeDefaults brings docker-compose.yml up on its own, as a
// user would (`up -d`, no locktest involved), and checks every server from
// this host through its published port: the Redis nodes and Sentinels
// answer PING, the Sentinels know redis-0 as the primary and each other,
// etcd's three members form one healthy cluster. A Sentinel restarts on
// its defaults (its config file starts empty again); a locktest run from
// the topology's network takes five slots and gives them back to their
// default servers, and the topology keeps running. `down -v` leaves
// nothing.
func TestDockerComposeDefaults(t *testing.T) {
	// Ports of this test's own, so that a user's topology on the default
	// ports does not collide with it.
	ports := map[string]int{}
	var env []string
	for _, s := range []string{"redis-0", "redis-1", "redis-2", "redis-3", "redis-4", "resource", "sentinel-0", "sentinel-1", "sentinel-2", "etcd-0", "etcd-1", "etcd-2"} {
		port, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[s] = port
		env = append(env, fmt.Sprintf("LOCKTEST_%s_PORT=%d", strings.ToUpper(strings.ReplaceAll(s, "-", "_")), port))
	}
	out := t.TempDir()
	p := newComposeProject(t, append(env, "LOCKTEST_COMPOSE_OUT="+out)...)
	start := time.Now()
	p.run(3*time.Minute, "up", "-d", "--no-color")
	t.Logf("docker-compose up -d: %s", time.Since(start).Round(time.Second))

	// Every service reports healthy (its probe, the server's own client,
	// works in an image without a shell), published on 127.0.0.1 only.
	deadline := time.Now().Add(90 * time.Second)
	for {
		states := p.states()
		healthy := 0
		for s, port := range ports {
			want := fmt.Sprintf("running healthy %s/tcp=127.0.0.1:%d", serverPort(s), port)
			if states[s] == want {
				healthy++
			} else if time.Now().After(deadline) {
				t.Fatalf("%s is %q after 90 s, want %q\n%s", s, states[s], want, p.run(time.Minute, "logs", "--no-color", s))
			}
		}
		if healthy == len(ports) {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("all healthy: %s", time.Since(start).Round(time.Second))
	addr := func(s string) string { return "127.0.0.1:" + strconv.Itoa(ports[s]) }
	// pingAll wants every Redis and Sentinel to answer within 30 s (a
	// slot a run gave back restarts its default server).
	pingAll := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for s := range ports {
			if strings.HasPrefix(s, "etcd") {
				continue
			}
			for err := respPing(addr(s)); err != nil; err = respPing(addr(s)) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: %v", s, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	pingAll()

	// The Sentinels monitor redis-0 under the name locktest's own
	// Sentinels use, by its address on the topology's network.
	primary := p.inspect("redis-0", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}")
	sentinelKnows := func(s string, quorum bool) {
		t.Helper()
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr(s), DisableIdentity: true})
		defer sc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			got, err := sc.GetMasterAddrByName(ctx, cluster.SentinelMaster).Result()
			if err == nil && len(got) == 2 && got[0] == primary && got[1] == "6379" {
				// CKQUORUM: the Sentinels found each other through the
				// primary and can authorize a failover.
				if !quorum {
					return
				}
				if q, err := sc.CkQuorum(ctx, cluster.SentinelMaster).Result(); err == nil && strings.HasPrefix(q, "OK 3 usable") {
					return
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: the primary is %v (%v), want %s:6379 with 3 usable Sentinels", s, got, err, primary)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	for _, s := range []string{"sentinel-0", "sentinel-1", "sentinel-2"} {
		sentinelKnows(s, true)
	}

	// One etcd cluster of three members, each endpoint healthy.
	var endpoints []string
	for _, s := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		endpoints = append(endpoints, addr(s))
		if err := etcdHealth(addr(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	ec, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	members, err := ec.MemberList(ctx)
	cancel()
	ec.Close()
	if err != nil || len(members.Members) != 3 {
		t.Fatalf("etcd member list: %v (%v), want 3 members", members, err)
	}

	// A restarted Sentinel starts from its flags alone: the config the
	// last start rewrote would repeat its monitor line, which it refuses.
	p.run(time.Minute, "restart", "sentinel-0")
	sentinelKnows("sentinel-0", false)

	// A one-off locktest run takes the running slots, and when it ends
	// the default servers are back and the topology is still up.
	ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := p.cmd(ctx, "run", "--rm", "locktest", "run", "--impl", "redlock", "--duration", "2s", "--backend", "compose")
	msg, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(msg), "verdict   VALID") {
		t.Fatalf("docker-compose run locktest run --impl redlock: %v\n%s", err, msg)
	}
	for _, slot := range []string{"redis-0", "redis-4", "resource"} {
		logs, _ := filepath.Glob(filepath.Join(out, "*", "*", "nodes", slot, slot+".log"))
		if len(logs) == 0 {
			t.Errorf("the run did not use slot %s", slot)
		}
	}
	pingAll()
	for s, st := range p.states() {
		if !strings.HasPrefix(st, "running ") {
			t.Errorf("after a one-off run %s is %q: the topology was stopped", s, st)
		}
	}
}

// serverPort is the port the default server of a service of
// docker-compose.yml listens on in its container.
func serverPort(service string) string {
	switch {
	case strings.HasPrefix(service, "sentinel"):
		return "26379"
	case strings.HasPrefix(service, "etcd"):
		return "2379"
	}
	return "6379"
}

// respPing sends PING as a RESP array, as a client library does, and
// wants +PONG: the server is up and accepting commands.
func respPing(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return fmt.Errorf("send PING: %w", err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read the answer to PING: %w", err)
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// etcdHealth asks the member's /health endpoint, which is healthy only
// while the cluster has a leader.
func etcdHealth(addr string) error {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("/health: %w", err)
	}
	if resp.StatusCode != http.StatusOK || h.Health != "true" {
		return fmt.Errorf("/health: %s, health %q", resp.Status, h.Health)
	}
	return nil
}

// TestDockerCompose runs docker-compose.yml's profile suite: the
// topology's servers come up on their defaults, and the locktest container
// runs suites/compose.yaml against them (each run takes its slots from
// their default servers) and then stops them, so that `up` runs to
// completion.
func TestDockerCompose(t *testing.T) {
	out := t.TempDir()
	p := newComposeProject(t, "LOCKTEST_COMPOSE_OUT="+out)
	start := time.Now()
	msg := p.run(6*time.Minute, "--profile", "suite", "up", "--no-color")
	t.Logf("docker-compose --profile suite up: %s", time.Since(start).Round(time.Second))
	if code := p.inspect("locktest", "{{.State.ExitCode}}"); code != "0" {
		t.Fatalf("the locktest container exited with %q\n%s", code, msg)
	}
	j := readJUnit(t, out)
	if n := len(j.Suites[0].Cases); n != 3 || j.Suites[0].Failures+j.Suites[0].Errors != 0 {
		t.Fatalf("junit: %d cases, %d failures, %d errors; want 3 passing\n%s", n, j.Suites[0].Failures, j.Suites[0].Errors, msg)
	}
	// Every server ran in its slot: Redlock's five nodes among them.
	for _, slot := range []string{"redis-0", "redis-4", "sentinel-2", "resource"} {
		logs, _ := filepath.Glob(filepath.Join(out, "runs", "*", "*", "*", "nodes", slot, slot+".log"))
		if len(logs) == 0 {
			t.Errorf("no run used slot %s", slot)
		}
	}
}
