package impls

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/cluster"
)

// Lock is a client of one lock design, owned by one worker process.
type Lock interface {
	// Acquire tries until the design's acquire deadline. An error wrapped
	// with Definite means the lock was definitely not granted; any other
	// error means it may have been.
	Acquire(ctx context.Context, key string) (Grant, error)
	// Release gives the lock back. ErrNotHeld (definite) means the service
	// said we no longer held it.
	Release(ctx context.Context, key string, g Grant) error
	Close() error
}

// Renewer is implemented by locks whose holder can extend its lease (a
// Redisson-style watchdog, an etcd lease keep-alive). It is optional, so a
// lock without renewal stays a plain Lock. Renew returns the grant with its
// new validity; a definite error means the lease was not extended (it may
// already be lost), any other error is an unknown outcome.
type Renewer interface {
	Renew(ctx context.Context, key string, g Grant) (Grant, error)
}

// GuardedStore is implemented by locks that keep the protected data in the
// lock service itself and make every read and write of it a transaction that
// commits only while the grant with that token is still held: Jepsen's
// lock-etcd-set. No late holder can then touch the data, whatever the pause
// or delay, because the check and the write are one atomic step on the
// server; a separate resource checking tokens (Kleppmann's fencing) is the
// other way to get there. Workloads read and write through it instead of
// the resource node (Design.GuardsWrites). A refusal returns ErrStale;
// token 0 reads without a guard (the final read after the run).
type GuardedStore interface {
	Read(ctx context.Context, key string, token int64) (int64, error)
	Write(ctx context.Context, key string, v, token int64) error
}

// ErrStale is the protected data refusing an operation whose token is no
// longer valid (older than one seen, or its lock no longer held). It is a
// definite failure: nothing was written.
var ErrStale = errors.New("stale fencing token")

// Grant is what a successful acquire returns.
type Grant struct {
	Owner string
	// Token is a fencing token, strictly increasing per key across grants;
	// 0 when the design does not fence.
	Token int64
	// Validity is how long the client may assume it holds the lock.
	Validity time.Duration
}

// CommandCounter is implemented by locks that count the store commands they
// send, so reports can compare the cost of an acquisition across designs.
type CommandCounter interface {
	Commands() int64
}

// definite marks an error as a definite failure: the operation did not
// take effect.
type definite struct{ err error }

func (d definite) Error() string { return d.err.Error() }
func (d definite) Unwrap() error { return d.err }

// Definite marks err as a definite failure.
func Definite(err error) error { return definite{err} }

// IsDefinite reports whether err says the operation did not take effect.
// Errors not marked definite are unknown outcomes: never assume failure.
func IsDefinite(err error) bool {
	var d definite
	return errors.As(err, &d)
}

// broken marks an error after which a lock client cannot go on.
type broken struct{ err error }

func (b broken) Error() string { return b.err.Error() }
func (b broken) Unwrap() error { return b.err }

// Broken marks err as fatal to the lock client: its program crashed, hung
// or broke the protocol, or a library call left it unusable. The operation
// in flight is recorded as an unknown outcome (it may have taken effect)
// and the worker stops with err instead of retrying into the same wall.
func Broken(err error) error { return broken{err} }

// IsBroken reports whether err says the lock client cannot go on.
func IsBroken(err error) bool {
	var b broken
	return errors.As(err, &b)
}

// Definite failures shared by designs.
var (
	ErrNotAcquired = Definite(errors.New("lock not acquired before the deadline"))
	ErrNotHeld     = Definite(errors.New("lock not held: released or expired"))
)

// Config is what a worker needs to build a Lock. It crosses the process
// boundary as JSON.
type Config struct {
	Client int      `json:"client"`
	Nodes  []string `json:"nodes"` // lock server addresses as this client dials them
	TTL    time.Duration
	// AcquireTimeout is the deadline D of one acquire call.
	AcquireTimeout time.Duration
	// IOTimeout bounds each request to a server.
	IOTimeout time.Duration
	// RetryMin and RetryJitter give the sleep between tries: [min, min+jitter).
	RetryMin    time.Duration
	RetryJitter time.Duration
	Seed        int64
	// Persist asks Deploy for servers that persist every write before
	// acknowledging it (Redis: AOF with appendfsync always), so that a
	// killed server restarts with its data. Otherwise nothing is on disk.
	Persist bool        `json:"persist,omitempty"`
	Clock   clock.Clock `json:"-"`
	// ExecCmd is the program the exec design runs, and ExecDir the
	// directory it runs in (where the user started locktest).
	ExecCmd string `json:"exec_cmd,omitempty"`
	ExecDir string `json:"exec_dir,omitempty"`
	// Checkpoint, when set, is called by designs at the points they list in
	// Design.Checkpoints, so that a fault can stop the client at exactly
	// that point (see CheckpointGranted). It may block while stopped.
	Checkpoint func(point string) `json:"-"`
}

// CheckpointGranted is reached inside Acquire when the store has granted
// the lock (for Redlock: a quorum of nodes said OK) and the client has not
// yet judged how long the grant is valid. A pause here is antirez's "client
// paused during acquire": the replies are in, the time is passing.
const CheckpointGranted = "acquire-granted"

// checkpoint calls cfg.Checkpoint if it is set.
func (cfg Config) checkpoint(point string) {
	if cfg.Checkpoint != nil {
		cfg.Checkpoint(point)
	}
}

// Deployment is what a design's servers look like once started.
type Deployment struct {
	// Nodes are the servers clients connect to, in Config.Nodes order.
	Nodes []*cluster.Node
}

// Design is a registered lock design.
type Design struct {
	Name        string
	Description string
	// Fenced designs hand out tokens the resource checks.
	Fenced bool
	// Renews: the design's Lock implements Renewer, so workloads that
	// renew leases can run on it.
	Renews bool
	// GuardsWrites: the design's Lock implements GuardedStore and keeps the
	// protected data itself; the run starts no resource node.
	GuardsWrites bool
	// Binaries the design's servers need, checked before anything starts:
	// binary name → Debian package.
	Binaries map[string]string
	// Roles lists the role of each server Deploy starts (cluster.RoleLock,
	// RolePrimary, …), so that a fault aimed at a role or a minority is
	// refused up front when the design has none. Empty: checked only once
	// the servers run.
	Roles []string
	// Checkpoints lists the Config.Checkpoint points the client reports.
	Checkpoints []string
	// LockDelay, in TTLs, is how long a lease that expired instead of
	// being released keeps the lock unavailable (Chubby's lock-delay); 0
	// for none. A pause of the holder must then outlive TTL + lock-delay
	// to let another client in, which envelope sweeps.
	LockDelay float64
	// Deploy starts the design's servers in c.
	Deploy func(ctx context.Context, c *cluster.Cluster, cfg Config) (Deployment, error)
	// New builds one client; called in the worker process.
	New func(cfg Config) (Lock, error)
}

var registry = map[string]Design{}

// Register adds a design; each design file calls it from init.
func Register(d Design) {
	if _, dup := registry[d.Name]; dup {
		panic("impls: duplicate design " + d.Name)
	}
	registry[d.Name] = d
}

// Lookup returns a design by name, or an error listing the valid names.
func Lookup(name string) (Design, error) {
	d, ok := registry[name]
	if !ok {
		return Design{}, fmt.Errorf("unknown impl %q (valid: %v)", name, Names())
	}
	return d, nil
}

// All returns the designs sorted by name.
func All() []Design {
	out := make([]Design, 0, len(registry))
	for _, d := range registry {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the registered design names, sorted.
func Names() []string {
	var names []string
	for _, d := range All() {
		names = append(names, d.Name)
	}
	return names
}
