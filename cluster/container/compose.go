package container

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	tc "github.com/testcontainers/testcontainers-go"

	"github.com/locktest/locktest/cluster"
)

// ComposeBackend runs a coordinator inside a docker-compose topology
// (docker-compose.yml at the repository root): the servers are the
// topology's containers, "slots" labelled io.locktest.slot=<node name>.
// A slot's entry point is `locktest node-exec`: without a node it runs the
// slot's default server (the command the compose file gives it), so the
// topology serves clients on its own. A run hands a slot its node by
// copying in the node's directory and command (the same Spec the other
// backends run), then restarting it, so the entry point execs the run's
// server instead; when the run ends, the slot gets its default back.
// Faults act on the slot as on any container: docker pause, kill, start.
// The coordinator reaches the Docker engine through its socket, mounted
// into its container.
const ComposeBackend = "compose"

// Slot labels and paths.
const (
	LabelSlot = "io.locktest.slot"
	// SlotSpec is where a slot finds the command of the node it runs.
	SlotSpec = "/etc/locktest/node.json"
	// NodeExecCommand is the hidden subcommand a slot runs.
	NodeExecCommand = "node-exec"
	// emptyFileFlag, before a slot's default command, names a file
	// node-exec empties before the server starts: Sentinel runs only from
	// a config file it may rewrite, and each start must begin from its
	// flags alone, not from what the last one wrote there (its monitor
	// line again would be a duplicate, which Sentinel refuses).
	emptyFileFlag  = "--empty-file"
	composeProject = "com.docker.compose.project"
	// composeOneOff marks a container of `docker-compose run`.
	composeOneOff = "com.docker.compose.oneoff"
)

func init() { cluster.RegisterBackend(ComposeBackend, newCompose) }

// compose is the backend of one run in a docker-compose topology.
type compose struct {
	cli     *tc.DockerClient
	project string
	nets    map[string]bool // the networks the coordinator's container is on
}

func newCompose(string) (cluster.Backend, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	self, _ := os.Hostname() // a container's host name is its id
	r, err := cli.ContainerInspect(ctx, self, client.ContainerInspectOptions{})
	if err != nil || r.Container.Config == nil || r.Container.Config.Labels[composeProject] == "" {
		cli.Close()
		return nil, fmt.Errorf("--backend compose runs inside a docker-compose topology (docker-compose.yml); this process is in no compose container (%v)", err)
	}
	c := &compose{cli: cli, project: r.Container.Config.Labels[composeProject], nets: map[string]bool{}}
	for name := range r.Container.NetworkSettings.Networks {
		c.nets[name] = true
	}
	return c, nil
}

func (c *compose) Name() string     { return ComposeBackend }
func (c *compose) BindHost() string { return "0.0.0.0" }
func (c *compose) Close() error     { return c.cli.Close() }

// Start gives n's slot the node and (re)starts it; after Kill, it starts
// the slot again as it was.
func (c *compose) Start(ctx context.Context, n *cluster.Node, prev cluster.Instance) (cluster.Instance, error) {
	if ci, ok := prev.(*instance); ok {
		if _, err := c.cli.ContainerStart(ctx, ci.id, client.ContainerStartOptions{}); err != nil {
			return nil, fmt.Errorf("restart slot %s: %w", n.Name, err)
		}
		return ci, nil
	}
	spec := n.Spec()
	for _, kv := range spec.Env {
		if strings.HasPrefix(kv, "LD_PRELOAD=") {
			return nil, errors.New("--backend compose: clock faults need the clock file shared with the coordinator: use --backend local or docker")
		}
	}
	id, err := c.slot(ctx, n.Name)
	if err != nil {
		return nil, err
	}
	ci := &instance{name: n.Name, id: id, cli: c.cli, log: spec.Log, keep: true, since: time.Now()}
	if err := ci.Kill(); err != nil {
		return nil, err
	}
	archive, err := slotArchive(spec)
	if err != nil {
		return nil, fmt.Errorf("slot %s: %w", n.Name, err)
	}
	if _, err := c.cli.CopyToContainer(ctx, ci.id, client.CopyToContainerOptions{DestinationPath: "/", Content: archive}); err != nil {
		return nil, fmt.Errorf("copy node %s into its slot: %w", n.Name, err)
	}
	if _, err := c.cli.ContainerStart(ctx, ci.id, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("start slot %s: %w", n.Name, err)
	}
	host, err := c.host(ctx, id, n.Name)
	if err != nil {
		return nil, err
	}
	n.SetHost(host)
	return ci, nil
}

// LinkHost is this container's address on the topology's network.
func (c *compose) LinkHost(ctx context.Context) (string, error) {
	self, _ := os.Hostname()
	return c.host(ctx, self, "the coordinator")
}

// Reserve returns the slot's address (the engine keeps it across the
// slot's restarts while no other container takes it).
func (c *compose) Reserve(ctx context.Context, name string) (string, error) {
	id, err := c.slot(ctx, name)
	if err != nil {
		return "", err
	}
	return c.host(ctx, id, name)
}

// slot finds the container of the topology that serves node name.
func (c *compose) slot(ctx context.Context, name string) (string, error) {
	f := client.Filters{}.Add("label", composeProject+"="+c.project).Add("label", LabelSlot+"="+name)
	list, err := c.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return "", fmt.Errorf("find slot %s: %w", name, err)
	}
	if len(list.Items) != 1 {
		return "", fmt.Errorf("--backend compose: the topology has %d containers labelled %s=%s, want 1 (see docker-compose.yml)", len(list.Items), LabelSlot, name)
	}
	return list.Items[0].ID, nil
}

// host is the slot's address on a network it shares with the coordinator.
func (c *compose) host(ctx context.Context, id, name string) (string, error) {
	r, err := c.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect slot %s: %w", name, err)
	}
	for net, ep := range r.Container.NetworkSettings.Networks {
		if c.nets[net] && ep.IPAddress.IsValid() {
			return ep.IPAddress.String(), nil
		}
	}
	return "", fmt.Errorf("slot %s shares no network with this container (is it running?)", name)
}

// idleSlot empties a stopped slot's SlotSpec and starts it, back on its
// default server, for the next run: it keeps its address, and the topology
// keeps running.
func idleSlot(ctx context.Context, cli *tc.DockerClient, id, name string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(SlotSpec, "/"), Mode: 0o644}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		return fmt.Errorf("idle slot %s: %w", name, err)
	}
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("idle slot %s: %w", name, err)
	}
	return nil
}

// slotSpec is what a slot execs.
type slotSpec struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

// slotArchive is a tar of the node's directory (at its path) and SlotSpec.
func slotArchive(spec cluster.Spec) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Parents first, so the directory exists whatever the slot holds.
	var parents []string
	for d := filepath.Dir(spec.Dir); d != "/" && d != "."; d = filepath.Dir(d) {
		parents = append([]string{d}, parents...)
	}
	for _, d := range parents {
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(d, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	err := filepath.Walk(spec.Dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = strings.TrimPrefix(p, "/")
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(slotSpec{Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir})
	if err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(SlotSpec, "/"), Mode: 0o644, Size: int64(len(js))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(js); err != nil {
		return nil, err
	}
	return &buf, tw.Close()
}

// NodeExec is a slot's entry point: it execs the node in SlotSpec, or,
// while the slot has none, its default server def (`[--empty-file FILE]…
// COMMAND ARG…`), or, with no default either, waits to be stopped.
func NodeExec(path string, def []string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(bytes.TrimSpace(data)) == 0) {
		if len(def) > 0 {
			return execDefault(def)
		}
		// As the first process of a container, only signals with a
		// handler reach it.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		return nil
	}
	if err != nil {
		return err
	}
	var s slotSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Chdir(s.Dir); err != nil {
		return err
	}
	return syscall.Exec(s.Path, append([]string{s.Path}, s.Args...), append(os.Environ(), s.Env...))
}

// execDefault empties the files def names with emptyFileFlag, then execs
// the rest of def. argv[0] stays as given: redis-server acts on the name it
// is called by (redis-sentinel).
func execDefault(def []string) error {
	for len(def) >= 2 && def[0] == emptyFileFlag {
		if err := os.WriteFile(def[1], nil, 0o644); err != nil {
			return fmt.Errorf("default server: %w", err)
		}
		def = def[2:]
	}
	if len(def) == 0 || strings.HasPrefix(def[0], "-") {
		return fmt.Errorf("default server: want [%s FILE]… COMMAND ARG…, got %q", emptyFileFlag, def)
	}
	bin, err := exec.LookPath(def[0])
	if err != nil {
		return fmt.Errorf("default server: %w", err)
	}
	return syscall.Exec(bin, def, os.Environ())
}

// StopTopologyEnv, set in the coordinator's container, makes StopTopology
// stop the topology's slots.
const StopTopologyEnv = "LOCKTEST_STOP_TOPOLOGY"

// StopTopology stops every slot of the docker-compose topology this
// process runs in, if StopTopologyEnv is set: the suite runner of
// `docker-compose --profile suite up` is what the topology was brought up
// for, and `up` ends only when every container has (a slot's default
// server would run forever). The coordinator calls it as it ends, whether
// or not a run got as far as taking a slot. A one-off coordinator
// (`docker-compose run`) leaves the topology running: `up -d` started it,
// for clients of its own, and nothing waits for it to end.
func StopTopology() {
	if os.Getenv(StopTopologyEnv) == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return
	}
	defer cli.Close()
	self, _ := os.Hostname()
	r, err := cli.ContainerInspect(ctx, self, client.ContainerInspectOptions{})
	if err != nil || r.Container.Config == nil {
		return
	}
	project := r.Container.Config.Labels[composeProject]
	if project == "" || r.Container.Config.Labels[composeOneOff] == "True" {
		return
	}
	f := client.Filters{}.Add("label", composeProject+"="+project).Add("label", LabelSlot)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: f})
	if err != nil {
		return
	}
	zero := 0
	var wg sync.WaitGroup
	for _, ctr := range list.Items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = cli.ContainerUnpause(ctx, ctr.ID, client.ContainerUnpauseOptions{})
			_, _ = cli.ContainerStop(ctx, ctr.ID, client.ContainerStopOptions{Timeout: &zero})
		}()
	}
	wg.Wait()
}
