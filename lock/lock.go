package lock

import (
	"context"
	"errors"
	"time"

	"github.com/locktest/locktest/clock"
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
// the resource node (impls.Design.GuardsWrites). A refusal returns
// ErrStale; token 0 reads without a guard (the final read after the run).
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
	// ExecCheckpoints are the checkpoints the exec program may announce:
	// any other is a broken program, not a point a fault could ever aim at.
	ExecCheckpoints []string `json:"exec_checkpoints,omitempty"`
	// Checkpoint, when set, is called by designs at the points they list in
	// impls.Design.Checkpoints, so that a fault can stop the client at
	// exactly that point (see CheckpointGranted). It may block while
	// stopped.
	Checkpoint func(point string) `json:"-"`
}

// Checkpoints a design's client reaches (Config.Reach) and a fault can
// stop it at.
const (
	// CheckpointGranted is reached inside Acquire when the store has
	// granted the lock (for Redlock: a quorum of nodes said OK) and the
	// client has not yet judged how long the grant is valid. A pause here
	// is antirez's "client paused during acquire": the replies are in, the
	// time is passing.
	CheckpointGranted = "acquire-granted"
	// CheckpointWaiting is reached inside Acquire when the client has
	// queued for a lock another client holds and is still waiting for it
	// (for etcd: Mutex.Lock has not returned after the time an uncontended
	// grant takes). A pause here outlasting the session is etcd #11456: the
	// waiter's key expires while it waits.
	CheckpointWaiting = "acquire-waiting"
)

// Reach tells cfg.Checkpoint, if set, that the client is at point; it may
// block while a fault holds the client there.
func (cfg Config) Reach(point string) {
	if cfg.Checkpoint != nil {
		cfg.Checkpoint(point)
	}
}
