package workloads

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/registry"
)

// Sink receives what a client does. It is the worker's link to the
// coordinator.
type Sink interface {
	// Record sends one history record.
	Record(history.Record)
	// InCriticalSection says this client now acts as the lock holder, at
	// the point where a pause does the most harm (after reading the
	// resource, before writing it). Faults that target the holder use it.
	InCriticalSection()
}

// Env is one client's view of the run.
type Env struct {
	Client   int
	Lock     lock.Lock
	Resource Store // nil for workloads that protect nothing
	Keys     []string
	Rand     *rand.Rand
	HoldMin  time.Duration
	HoldMax  time.Duration
	// TTL is the lock's lease, by which a renewing workload paces its
	// renewals.
	TTL  time.Duration
	Sink Sink
	// Stopping reports that the coordinator asked the client to stop; the
	// loop finishes its current cycle (release included) and returns.
	Stopping func() bool
	// Err is set when the lock client broke (lock.IsBroken): the loop
	// stops and the worker reports it.
	Err error
	seq int
}

// Workload is a registered client loop.
type Workload struct {
	Name        string
	Description string
	// NeedsResource workloads get a resource node and a final read.
	NeedsResource bool
	// NeedsRenew workloads extend leases: the design must be Renews.
	NeedsRenew bool
	// Cycle runs one lock cycle. ctx is cancelled when the run is stopping,
	// which cuts short a waiting acquire.
	Cycle func(ctx context.Context, env *Env)
}

var registered = registry.New("workload", func(w Workload) string { return w.Name })

// Register adds a workload; each workload file calls it from init.
func Register(w Workload) { registered.Register(w) }

// Lookup returns a workload by name, or an error listing the valid names.
func Lookup(name string) (Workload, error) { return registered.Lookup(name) }

// All returns the workloads sorted by name.
func All() []Workload { return registered.All() }

// Names returns the registered workload names, sorted.
func Names() []string { return registered.Names() }

// Run runs cycles until the coordinator asks to stop or the lock client
// breaks.
func (w Workload) Run(ctx context.Context, env *Env) {
	for !env.Stopping() && ctx.Err() == nil && env.Err == nil {
		w.Cycle(ctx, env)
	}
}

// op is an invoked operation waiting for its completion.
type op struct {
	env *Env
	rec history.Record
}

// invoke records the start of an operation.
func (e *Env) invoke(f, key string) *op {
	e.seq++
	r := history.Record{Process: e.Client, Seq: e.seq, Type: history.Invoke, F: f, Key: key, Time: clock.Mono()}
	e.Sink.Record(r)
	return &op{env: e, rec: r}
}

// done records the completion. A nil error is ok; a definite error is
// fail; anything else is info: the op may or may not have taken effect.
func (o *op) done(err error, set func(*history.Record)) {
	r := o.rec
	r.Time = clock.Mono()
	switch {
	case err == nil:
		r.Type = history.OK
	case lock.IsDefinite(err) || errors.Is(err, lock.ErrStale):
		r.Type = history.Fail
	default:
		r.Type = history.Info
	}
	if errors.Is(err, lock.ErrStale) {
		r.Error = history.RejectedError
	} else if err != nil {
		r.Error = err.Error()
	}
	if set != nil {
		set(&r)
	}
	if lock.IsBroken(err) && o.env.Err == nil {
		o.env.Err = err
	}
	o.env.Sink.Record(r)
}

// key picks the lock key for the next cycle.
func (e *Env) key() string { return e.Keys[e.Rand.IntN(len(e.Keys))] }

// hold sleeps a hold time.
func (e *Env) hold() { time.Sleep(e.holdTime()) }

// holdTime draws a hold time in [HoldMin, HoldMax].
func (e *Env) holdTime() time.Duration {
	d := e.HoldMin
	if e.HoldMax > e.HoldMin {
		d += time.Duration(e.Rand.Int64N(int64(e.HoldMax - e.HoldMin)))
	}
	return d
}

// commands returns the lock client's command count, if it keeps one.
func (e *Env) commands() int64 {
	if c, ok := e.Lock.(lock.CommandCounter); ok {
		return c.Commands()
	}
	return 0
}

// acquire records and runs one acquire.
func (e *Env) acquire(ctx context.Context, key string) (lock.Grant, bool) {
	o := e.invoke(history.FAcquire, key)
	before := e.commands()
	g, err := e.Lock.Acquire(ctx, key)
	o.done(err, func(r *history.Record) { r.Token, r.Cmds, r.Validity = g.Token, int(e.commands()-before), said(g, err) })
	return g, err == nil
}

// said is the validity an ok grant carried, for the history: the lease
// judge tells a lock that claimed a lease it had lost from one that said so.
func said(g lock.Grant, err error) int64 {
	if err != nil {
		return 0
	}
	return int64(g.Validity)
}

// release records and runs one release. It runs to completion even when
// the run is stopping, so histories end with locks given back.
func (e *Env) release(key string, g lock.Grant) {
	o := e.invoke(history.FRelease, key)
	before := e.commands()
	err := e.Lock.Release(context.Background(), key, g)
	o.done(err, func(r *history.Record) { r.Token, r.Cmds = g.Token, int(e.commands()-before) })
}
