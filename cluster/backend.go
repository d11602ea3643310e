package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/locktest/locktest/registry"
)

// Instance is one incarnation of a node's server: a local process or a
// container. Faults act on it (pause, kill) without knowing which.
type Instance interface {
	// Pause freezes the server as a stop-the-world pause would (SIGSTOP of
	// its process group; docker pause, the cgroup freezer).
	Pause() error
	// Resume undoes Pause.
	Resume() error
	// Paused reports whether Pause is in effect.
	Paused() bool
	// Stopped reports whether the server is frozen, whoever froze it: the
	// check behind "nothing is left paused".
	Stopped() bool
	// Exited reports whether the server has exited, and how.
	Exited() (bool, error)
	// Kill kills the server at once (continuing it first if paused); the
	// node can be started again on the same address and data directory.
	Kill() error
	// Stop asks the server to exit and kills it after grace. It is the
	// end of the node: a container is removed.
	Stop(grace time.Duration) error
	// HostPid is the server's process id as this host sees it: a fault
	// that reaches into its sockets needs it.
	HostPid() (int, error)
}

// StatReader is an Instance whose server's /proc is on another host (a
// server of --nodes): it reads there what ReadProcStat reads here, so
// that its memory, files and connections are sampled all the same.
type StatReader interface {
	// ProcFiles returns the server's pid on its host and its /proc files.
	ProcFiles() (int, ProcFiles, error)
}

// Backend runs the servers of a cluster: as local processes (the default)
// or as containers. A node's Spec is the same on every backend: containers
// see the node's directory, the clock shim and the binaries at the paths
// the host has, so a deploy function writes one configuration.
type Backend interface {
	// Name is the --backend value.
	Name() string
	// BindHost is the address servers listen on: loopback for local
	// processes, every interface inside a container (its own network).
	BindHost() string
	// Reserve returns the host the node called name will have, before it
	// starts: servers that must name their own address or their peers'
	// in their configuration (etcd's initial cluster) ask first.
	Reserve(ctx context.Context, name string) (string, error)
	// LinkHost is the address the coordinator's links listen on: one the
	// servers can dial too (a peer's link), loopback for local processes.
	LinkHost(ctx context.Context) (string, error)
	// Start starts n's server, or restarts it after Kill when prev is the
	// instance that was killed, on the same address.
	Start(ctx context.Context, n *Node, prev Instance) (Instance, error)
	// Close removes whatever the backend created besides the instances
	// (a container network, say). Instances are stopped before.
	Close() error
}

// A ServerAdopter is a backend whose hosts run the user's servers (the
// hosts of --nodes): it signals them there, where this host's kill cannot
// reach, and continues them however the coordinator ends.
type ServerAdopter interface {
	// AdoptServers checks that each server's pid names a running process
	// of its host that listens on its address, and returns an instance
	// for each, named as names says, that pauses and continues it and
	// never kills it.
	AdoptServers(ctx context.Context, names []string, servers []UserServer) ([]Instance, error)
}

// BackendFactory makes a backend for the cluster of one run.
type BackendFactory func(runDir string) (Backend, error)

// namedBackend is a BackendFactory under its --backend name.
type namedBackend struct {
	name string
	make BackendFactory
}

var backends = registry.New("backend", func(b namedBackend) string { return b.name })

// RegisterBackend adds a backend under its --backend name.
func RegisterBackend(name string, f BackendFactory) { backends.Register(namedBackend{name, f}) }

// BackendNames lists the registered backends, sorted.
func BackendNames() []string { return backends.Names() }

// CheckBackend validates a --backend value; "" is the local default.
func CheckBackend(name string) error {
	if _, err := backends.Lookup(name); err != nil && name != "" {
		// The flag's message lists the few names without brackets.
		return fmt.Errorf("unknown backend %q (valid: %s)", name, strings.Join(BackendNames(), ", "))
	}
	return nil
}

// LocalBackend is the default: servers are child processes on loopback.
const LocalBackend = "local"

func init() {
	RegisterBackend(LocalBackend, func(string) (Backend, error) { return local{}, nil })
}

// local runs servers as child processes of the coordinator.
type local struct{}

func (local) Name() string     { return LocalBackend }
func (local) BindHost() string { return "127.0.0.1" }
func (local) Close() error     { return nil }

func (local) Reserve(context.Context, string) (string, error) { return "127.0.0.1", nil }
func (local) LinkHost(context.Context) (string, error)        { return "127.0.0.1", nil }

func (local) Start(_ context.Context, n *Node, _ Instance) (Instance, error) {
	n.SetHost("127.0.0.1")
	p, err := Start(n.spec)
	if err != nil {
		return nil, err
	}
	return p, nil
}
