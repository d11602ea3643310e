package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	mobycontainer "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	tc "github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/locktest/locktest/cluster"
)

// DockerBackend runs every server in its own container, on a network the
// run creates, each container with its own address.
const DockerBackend = "docker"

func init() { cluster.RegisterBackend(DockerBackend, newDocker) }

func init() {
	// testcontainers' reaper (Ryuk) is an image pulled from a registry, and
	// this machine, CI and many users have none: the docker backend reaps
	// its own containers (labels, a watchdog process, a sweep at start).
	// The setting is read once, at testcontainers' first call.
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	tclog.SetDefault(slogPrintf{})
}

// slogPrintf sends testcontainers' chatter to the debug log, not stdout.
type slogPrintf struct{}

func (slogPrintf) Printf(format string, v ...any) {
	slog.Debug("testcontainers: " + strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// docker is the container backend of one run. Containers, the network
// and anything else it creates carry the run's labels (see reap.go), so
// that whatever a killed coordinator left is found and removed.
type docker struct {
	runID string
	cli   *tc.DockerClient
	guard *watchdog

	mu       sync.Mutex
	network  string
	subnet   netip.Prefix
	hosts    int                   // addresses handed out on the subnet
	reserved map[string]netip.Addr // node name → its address
}

func newDocker(runDir string) (cluster.Backend, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	// What earlier coordinators could not remove (SIGKILL, a lost
	// watchdog) goes before this run adds anything.
	if err := Sweep(ctx, cli, ""); err != nil {
		slog.Warn("removing containers of dead runs", "err", err)
	}
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	d := &docker{runID: "locktest-" + hex.EncodeToString(id), cli: cli}
	if d.guard, err = startWatchdog(d.runID); err != nil {
		cli.Close()
		return nil, err
	}
	return d, nil
}

// dockerClient connects to the engine (DOCKER_HOST or the local socket)
// and checks that it answers.
func dockerClient(ctx context.Context) (*tc.DockerClient, error) {
	cli, err := tc.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, &DockerUnavailableError{err}
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, &DockerUnavailableError{err}
	}
	return cli, nil
}

// DockerUnavailableError says the Docker engine cannot be reached.
type DockerUnavailableError struct{ Err error }

func (e *DockerUnavailableError) Error() string {
	return fmt.Sprintf("--backend docker: the Docker engine does not answer (install docker.io and start it, or set DOCKER_HOST): %v", e.Err)
}

func (e *DockerUnavailableError) Unwrap() error { return e.Err }

func (d *docker) Name() string { return DockerBackend }

// BindHost: a container has its own network namespace, whose only
// interfaces are loopback and the run's network.
func (d *docker) BindHost() string { return "0.0.0.0" }

// Start creates the node's container on the run's network with a fixed
// address, or starts the killed container again (same address, same
// files), as a restarted machine would come back.
func (d *docker) Start(ctx context.Context, n *cluster.Node, prev cluster.Instance) (cluster.Instance, error) {
	if c, ok := prev.(*instance); ok {
		if _, err := d.cli.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
			return nil, fmt.Errorf("restart container of %s: %w", n.Name, err)
		}
		return c, nil
	}
	spec := n.Spec()
	image, err := ImageFor(spec.Path)
	if err != nil {
		return nil, err
	}
	if err := d.checkImage(ctx, image); err != nil {
		return nil, err
	}
	netName, ip, err := d.address(ctx, n.Name)
	if err != nil {
		return nil, err
	}
	n.SetHost(ip.String())
	owner, err := containerUser(spec)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	req := tc.ContainerRequest{
		Image:          image.Ref(),
		Name:           d.runID + "-" + n.Name,
		Entrypoint:     []string{spec.Path},
		Cmd:            spec.Args,
		Env:            env,
		Labels:         d.labels(),
		Networks:       []string{netName},
		NetworkAliases: map[string][]string{netName: {n.Name}},
		ConfigModifier: func(c *mobycontainer.Config) {
			c.User = owner
			c.WorkingDir = spec.Dir
			c.Hostname = n.Name
		},
		HostConfigModifier: func(h *mobycontainer.HostConfig) { h.Binds = binds(spec) },
		EndpointSettingsModifier: func(m map[string]*network.EndpointSettings) {
			if m[netName] == nil {
				m[netName] = &network.EndpointSettings{}
			}
			m[netName].IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ip}
		},
	}
	ctr, err := tc.GenericContainer(ctx, tc.GenericContainerRequest{ContainerRequest: req, Started: true})
	if ctr != nil {
		c := &instance{name: n.Name, id: ctr.GetContainerID(), cli: d.cli, log: spec.Log}
		if err != nil {
			_ = c.Stop(0)
			return nil, fmt.Errorf("start container of %s: %w", n.Name, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("start container of %s: %w", n.Name, err)
}

// containerUser is who the server runs as: the coordinator's user, or the
// one Spec.RunAs names when the coordinator is root, as for a process.
func containerUser(spec cluster.Spec) (string, error) {
	if spec.RunAs == "" || os.Geteuid() != 0 {
		return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()), nil
	}
	u, err := user.Lookup(spec.RunAs)
	if err != nil {
		return "", fmt.Errorf("run %s as %s: %w", spec.Name, spec.RunAs, err)
	}
	return u.Uid + ":" + u.Gid, nil
}

// binds makes the node's directory (configuration, data, the clock file)
// and any file its environment names (the clock shim) appear in the
// container at the paths they have on the host.
func binds(spec cluster.Spec) []string {
	out := []string{spec.Dir + ":" + spec.Dir}
	for _, kv := range spec.Env {
		_, v, _ := strings.Cut(kv, "=")
		if !filepath.IsAbs(v) || strings.HasPrefix(v, spec.Dir+"/") {
			continue
		}
		if st, err := os.Stat(v); err == nil && !st.IsDir() {
			out = append(out, v+":"+v+":ro")
		}
	}
	return out
}

func (d *docker) checkImage(ctx context.Context, image Image) error {
	if _, err := d.cli.ImageInspect(ctx, image.Ref()); err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "no such image") {
			return &MissingImageError{Image: image.Ref()}
		}
		return fmt.Errorf("inspect image %s: %w", image.Ref(), err)
	}
	return nil
}

// MissingImageError says an image has not been built on this machine.
type MissingImageError struct{ Image string }

func (e *MissingImageError) Error() string {
	return fmt.Sprintf("docker image %s is missing: build the images from this machine's binaries with `locktest images build` (no registry is used)", e.Image)
}

// LinkHost is the gateway of the run's network: the host's address on it,
// which the containers reach (a ZooKeeper peer dials its peers' links).
func (d *docker) LinkHost(ctx context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.network == "" {
		if err := d.createNetwork(ctx); err != nil {
			return "", err
		}
	}
	return d.subnet.Addr().Next().String(), nil
}

// Reserve hands out the node's fixed address ahead of its start.
func (d *docker) Reserve(ctx context.Context, name string) (string, error) {
	_, ip, err := d.address(ctx, name)
	return ip.String(), err
}

// address creates the run's network on first use and hands out the fixed
// address of node name on it (the same one on every call). Fixed, because
// a killed container that is started again must come back where its peers
// and Sentinel knew it.
func (d *docker) address(ctx context.Context, name string) (string, netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.network == "" {
		if err := d.createNetwork(ctx); err != nil {
			return "", netip.Addr{}, err
		}
	}
	if ip, ok := d.reserved[name]; ok {
		return d.network, ip, nil
	}
	d.hosts++
	ip := d.subnet.Addr()
	for range d.hosts + 1 { // .1 is the gateway
		ip = ip.Next()
	}
	if !d.subnet.Contains(ip) {
		return "", netip.Addr{}, fmt.Errorf("network %s: no address left", d.network)
	}
	if d.reserved == nil {
		d.reserved = map[string]netip.Addr{}
	}
	d.reserved[name] = ip
	return d.network, ip, nil
}

// createNetwork creates a bridge network with a subnet of its own: Docker
// gives containers fixed addresses only on subnets the user chose. A
// subnet another network (a parallel run's) holds is refused; try the next.
func (d *docker) createNetwork(ctx context.Context) error {
	start, _ := rand.Int(rand.Reader, big.NewInt(250))
	var errs []error
	for i := range 20 {
		third := (int(start.Int64()) + i*13) % 250
		prefix := netip.MustParsePrefix(fmt.Sprintf("10.213.%d.0/24", third))
		_, err := d.cli.NetworkCreate(ctx, d.runID, client.NetworkCreateOptions{
			Driver: "bridge", Labels: d.labels(),
			IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: prefix, Gateway: prefix.Addr().Next()}}},
		})
		if err == nil {
			d.network, d.subnet = d.runID, prefix
			return nil
		}
		errs = append(errs, err)
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	return fmt.Errorf("create network %s: %w", d.runID, errors.Join(errs...))
}

// Close removes every container of the run that is left (normally none:
// each node's Stop removed its own), then the network, and lets the
// watchdog go.
func (d *docker) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := Sweep(ctx, d.cli, d.runID)
	d.guard.release()
	d.cli.Close()
	return err
}

// labels mark everything the run creates (see reap.go).
func (d *docker) labels() map[string]string {
	return map[string]string{LabelRun: d.runID, LabelOwner: ownerID()}
}

// instance is a node's server running in a container.
type instance struct {
	name string
	id   string
	cli  *tc.DockerClient
	log  io.Writer
	// keep: the container is not ours to remove (a compose slot); Stop
	// kills it and keeps the output since the run took it.
	keep  bool
	since time.Time

	mu     sync.Mutex
	paused bool
}

func (c *instance) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// Pause freezes every process of the container (the cgroup freezer): as
// SIGSTOP, nothing runs and the sockets stay open.
func (c *instance) Pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := c.ctx()
	defer cancel()
	if _, err := c.cli.ContainerPause(ctx, c.id, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause %s: %w", c.name, err)
	}
	c.paused = true
	return nil
}

func (c *instance) Resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resumeLocked()
}

func (c *instance) resumeLocked() error {
	ctx, cancel := c.ctx()
	defer cancel()
	if st, err := c.state(ctx); err == nil && !st.Paused {
		c.paused = false
		return nil
	}
	if _, err := c.cli.ContainerUnpause(ctx, c.id, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("unpause %s: %w", c.name, err)
	}
	c.paused = false
	return nil
}

func (c *instance) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

func (c *instance) state(ctx context.Context) (*mobycontainer.State, error) {
	r, err := c.cli.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", c.name, err)
	}
	if r.Container.State == nil {
		return nil, fmt.Errorf("inspect %s: no state", c.name)
	}
	return r.Container.State, nil
}

// HostPid is the pid of the container's first process: the server itself,
// as the entrypoint is its binary.
func (c *instance) HostPid() (int, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	st, err := c.state(ctx)
	if err != nil {
		return 0, err
	}
	if st.Pid == 0 {
		return 0, fmt.Errorf("%s is not running", c.name)
	}
	return st.Pid, nil
}

func (c *instance) Stopped() bool {
	ctx, cancel := c.ctx()
	defer cancel()
	st, err := c.state(ctx)
	return err == nil && st.Paused
}

func (c *instance) Exited() (bool, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	st, err := c.state(ctx)
	if err != nil {
		return true, err // removed: as gone as can be
	}
	if st.Running {
		return false, nil
	}
	if st.ExitCode != 0 {
		return true, fmt.Errorf("%s exited with status %d", c.name, st.ExitCode)
	}
	return true, nil
}

// Kill kills the container's processes (unfreezing it first: the engine
// refuses to kill a paused container) and waits until it has stopped. The
// container stays, to be started again.
func (c *instance) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.resumeLocked(); err != nil {
		return err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	if _, err := c.cli.ContainerKill(ctx, c.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil &&
		!strings.Contains(err.Error(), "is not running") {
		return fmt.Errorf("kill %s: %w", c.name, err)
	}
	for {
		st, err := c.state(ctx)
		if err != nil {
			return err
		}
		if !st.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill %s: still running: %w", c.name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops the container (SIGTERM, SIGKILL after grace), copies its
// output into the node's log and removes it (a slot: sets it idle again).
func (c *instance) Stop(grace time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
	defer cancel()
	var errs []error
	if err := c.resumeLocked(); err != nil {
		errs = append(errs, err)
	}
	secs := int(grace.Seconds())
	if _, err := c.cli.ContainerStop(ctx, c.id, client.ContainerStopOptions{Timeout: &secs}); err != nil {
		errs = append(errs, fmt.Errorf("stop %s: %w", c.name, err))
	}
	if c.log != nil {
		opt := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true}
		if !c.since.IsZero() {
			// To the nanosecond: the slot's default server may have
			// written its start-up lines within the same second.
			opt.Since = fmt.Sprintf("%d.%09d", c.since.Unix(), c.since.Nanosecond())
		}
		if logs, err := c.cli.ContainerLogs(ctx, c.id, opt); err == nil {
			_, _ = stdcopy.StdCopy(c.log, c.log, logs)
			logs.Close()
		}
	}
	if c.keep {
		return errors.Join(append(errs, idleSlot(ctx, c.cli, c.id, c.name))...)
	}
	if _, err := c.cli.ContainerRemove(ctx, c.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", c.name, err))
	}
	return errors.Join(errs...)
}
