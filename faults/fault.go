package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/registry"
)

// Fault is one kind of fault, registered by name.
type Fault interface {
	Name() string
	// Description says in one line what the fault does and to what.
	Description() string
	// Traits says what the fault is, for everything that is not running
	// it: judging its effect, warnings, sweeps and searches.
	Traits() Traits
	// Applies returns an error when the fault makes no sense for a design
	// (e.g. failover without a primary) or a workload, so the run is
	// refused up front.
	Applies(d impls.Design, w Workload) error
	// Run injects the fault on its schedule until ctx ends, then heals
	// whatever is still active and returns.
	Run(ctx context.Context, env *Env) error
}

// Workload is what a fault may need to know of the run's workload. It is
// not the workloads package's: the faults act below what clients do.
type Workload struct {
	Name string
	// Resource: the workload writes a protected resource.
	Resource bool
}

// Env is what a fault acts on.
type Env struct {
	Rand *rand.Rand
	// Interval is the mean quiet time between faults; Duration how long
	// each lasts.
	Interval time.Duration
	Duration time.Duration
	TTL      time.Duration
	// Target is what this fault aims at: its default or --fault-target.
	Target Target
	// Latency ± Jitter is what the latency fault adds to a round trip.
	Latency, Jitter time.Duration
	// ClockDelta is how far clock faults move a clock (negative: back);
	// ClockRate how fast a skewed client clock runs (1: true speed).
	ClockDelta time.Duration
	ClockRate  float64
	// Loss is the probability with which the loss fault drops a packet.
	Loss    float64
	Clients Clients
	// Nodes are the design's servers; the resource is not one of them.
	Nodes []*cluster.Node
	// Links are every proxied link of the run.
	Links []*cluster.Link
	// Keys are the lock keys the workload takes, so that a fault can aim
	// at the server that holds one (a cluster shards them).
	Keys []string
	// Await waits for the next event of a lock moment (MomentGrant,
	// MomentAcquire or MomentRelease) at a client that is neither paused
	// nor dead, and returns that client's index.
	Await func(ctx context.Context, moment string) (int, error)
	// Moment aligns every strike of an every-scheduled fault to a lock
	// moment (see Moments); "" or MomentAny keeps the wall-clock schedule.
	Moment string
	// momentClient is the client whose moment the current strike was
	// aligned to, -1 when none.
	momentClient int
	// Started and Stopped record fault events in the history; healing
	// is how long the heal took before the stop (a restart), or 0.
	Started func(Strike)
	Stopped func(fault, target string, healing time.Duration)
	Log     *slog.Logger
	// PauseAt arms every client to stop when it next reaches the
	// checkpoint (lock.Config.Checkpoint), waits for the first that does,
	// stops it there (SIGSTOP), disarms the rest and returns its index.
	// The caller resumes it.
	PauseAt func(ctx context.Context, point string) (int, error)
	// Checkpoint is where a fault that strikes at the run's checkpoint
	// (Traits.AtCheckpoint) stops a client: --checkpoint, or the design's
	// first.
	Checkpoint string
	// Pair, when set, makes each strike of the fault begin together with
	// its partner's in a pair (--fault a+b); nil: its own schedule.
	Pair *Pairing
	// strike is the pair's current strike, nil outside a pair.
	strike *pairStrike
}

// Clients is the coordinator's handle on the worker processes. A client
// keeps its index across restarts; its process changes.
type Clients interface {
	Len() int
	// Process returns client i's current process.
	Process(i int) *cluster.Process
	// Crash kills client i with SIGKILL and records, for the checker, that
	// whatever lock it held may now expire.
	Crash(i int) error
	// Restart starts a new process for a crashed client i.
	Restart(i int) error
	// SetClock offsets the wall clock client i's lock reads and sets its
	// rate; (0, 1) is the true clock.
	SetClock(i int, offset time.Duration, rate float64) error
}

// NeedClientLinks reports whether any of fs may act on the links between
// clients and servers (Traits.Links).
func NeedClientLinks(fs []Fault) bool {
	return slices.ContainsFunc(fs, func(f Fault) bool { return f.Traits().Links })
}

// Injects reports whether any of fs acts on anything (is not inert). A
// run that injects nothing needs no client's message at once, so its
// workers batch them, and its settings cannot keep a fault from acting.
func Injects(fs []Fault) bool {
	return slices.ContainsFunc(fs, func(f Fault) bool { return !f.Traits().Inert })
}

// NeedServerClocks reports whether any of fs moves servers' clocks
// (Traits.ServerClocks).
func NeedServerClocks(fs []Fault) bool {
	return slices.ContainsFunc(fs, func(f Fault) bool { return f.Traits().ServerClocks })
}

// Wait sleeps for a seeded random quiet time around Interval, or until ctx
// ends (returning false).
func (e *Env) Wait(ctx context.Context) bool {
	d := e.Interval/2 + time.Duration(e.Rand.Int64N(int64(e.Interval)+1))
	return sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// hit is one occurrence of a fault, already in effect.
// Strike is one fault's start, as the history records it.
type Strike struct {
	Fault, Target string
	// Moment is the lock moment the strike was aligned to ("" for none);
	// Point the checkpoint where it stopped its client ("" for none).
	Moment, Point string
	// Asked is the length the fault keeps, or 0 when it holds by its own
	// logic.
	Asked time.Duration
}

type hit struct {
	target string
	// point is the checkpoint where the strike stopped its client, if any.
	point string
	// hold lasts the fault out; nil sleeps Duration or until ctx ends.
	hold func(ctx context.Context)
	// heal undoes the fault; it must work after ctx has ended.
	heal func() error
}

// every is the schedule most faults share: a seeded quiet time, the lock
// moment if one is set, then one hit for Duration, healed, until ctx ends;
// in a pair, the quiet time and the moment are its first fault's and both
// strike together (Env.next). strike puts the fault in effect, or fails
// having changed nothing.
func every(ctx context.Context, env *Env, fault string, strike func(ctx context.Context) (hit, error)) error {
	for env.next(ctx) {
		h, err := strike(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the run ended while choosing a target
			}
			return fmt.Errorf("%s: %w", fault, err)
		}
		asked := env.Duration
		if h.hold != nil {
			asked = 0
		}
		env.Started(Strike{Fault: fault, Target: h.target, Moment: env.Moment, Point: h.point, Asked: asked})
		if h.hold != nil {
			h.hold(ctx)
		} else {
			sleep(ctx, env.Duration)
		}
		healStart := time.Now()
		err = h.heal()
		env.Stopped(fault, h.target, time.Since(healStart))
		if err != nil {
			return fmt.Errorf("%s: heal %s: %w", fault, h.target, err)
		}
	}
	return nil
}

// onAll applies do to every item at once, as a network or a cluster fails
// at once (on --nodes each act is a round trip to a host); if one fails it
// undoes the ones done, so a strike fails having changed nothing. The
// returned heal undoes all, at once too.
func onAll[T any](items []T, do, undo func(T) error) (func() error, error) {
	all := func(items []T, act func(T) error) []error {
		errs := make([]error, len(items))
		var wg sync.WaitGroup
		for i, it := range items {
			wg.Go(func() { errs[i] = act(it) })
		}
		wg.Wait()
		return errs
	}
	errs := all(items, do)
	if err := errors.Join(errs...); err != nil {
		var done []T
		for i, it := range items {
			if errs[i] == nil {
				done = append(done, it)
			}
		}
		return nil, errors.Join(append([]error{err}, all(done, undo)...)...)
	}
	return func() error { return errors.Join(all(items, undo)...) }, nil
}

var registered = registry.New("fault", Fault.Name)

// Register adds a fault; each fault file calls it from init. A fault
// whose traits contradict themselves stops the program there.
func Register(f Fault) {
	if err := checkTraits(f); err != nil {
		panic(err)
	}
	registered.Register(f)
}

// Lookup returns a fault by name, or an error listing the valid names.
func Lookup(name string) (Fault, error) { return registered.Lookup(name) }

// All returns the faults sorted by name.
func All() []Fault { return registered.All() }

// Names returns the registered fault names, sorted.
func Names() []string { return registered.Names() }
