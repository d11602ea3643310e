package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Workload{
		Name: "counter",
		Description: "acquire, read the protected counter, sleep, write counter+1 with the token, release: " +
			"checks that no update is lost",
		NeedsResource: true,
		Cycle:         incrementCycle(false),
	})
	Register(Workload{
		Name: "counter-renew",
		Description: "counter with lease renewals between the read and the write (one in a short hold, " +
			"every TTL/3 in a long one); a refused renewal abandons the write (needs a design that renews)",
		NeedsResource: true,
		NeedsRenew:    true,
		Cycle:         incrementCycle(true),
	})
}

// incrementCycle is one acquire-increment-release: the critical section is
// one incr op that reads v and writes v+1. With renew, the lease is renewed
// in the middle of the hold, between the read and the write (Resolve
// guarantees a Renewer).
func incrementCycle(renew bool) func(ctx context.Context, e *Env) {
	return func(ctx context.Context, e *Env) {
		key := e.key()
		g, ok := e.acquire(ctx, key)
		if !ok {
			return
		}
		o := e.invoke(history.FIncr, key)
		v, err := e.Resource.Read(context.Background(), key, g.Token)
		if err != nil {
			// Nothing was written: a failed or refused read is a definite
			// failure of the increment.
			o.done(definiteRead(err), func(r *history.Record) { r.Token = g.Token })
			e.release(key, g)
			return
		}
		e.Sink.InCriticalSection()
		if !renew {
			e.hold()
		} else if g, err = e.holdRenewing(key, g); err != nil {
			o.done(lock.Definite(fmt.Errorf("renewal failed, nothing written: %w", err)),
				func(r *history.Record) { r.Token = g.Token })
			e.release(key, g)
			return
		}
		err = e.Resource.Write(context.Background(), key, v+1, g.Token)
		o.done(err, func(r *history.Record) { r.Value, r.Token = history.Int64(v), g.Token })
		e.release(key, g)
	}
}

// holdRenewing holds for two draws of the hold time with a renewal between
// them and, when the hold is longer, one every third of the TTL, as a
// watchdog renews: a renewal checks the lease after whatever pause hit the
// hold before it, and keeps a long hold's lease alive. It returns the
// first renewal's error that was not a success.
func (e *Env) holdRenewing(key string, g lock.Grant) (lock.Grant, error) {
	total := e.holdTime() + e.holdTime()
	every := total / 2
	if e.TTL > 0 {
		every = min(every, e.TTL/3)
	}
	for {
		time.Sleep(min(every, total))
		if total -= every; total <= 0 {
			return g, nil
		}
		var err error
		if g, err = e.renew(key, g); err != nil {
			return g, err
		}
	}
}

// renew records and runs one lease renewal.
func (e *Env) renew(key string, g lock.Grant) (lock.Grant, error) {
	o := e.invoke(history.FRenew, key)
	before := e.commands()
	ng, err := e.Lock.(lock.Renewer).Renew(context.Background(), key, g)
	o.done(err, func(r *history.Record) {
		r.Token, r.Cmds, r.Validity = g.Token, int(e.commands()-before), said(ng, err)
	})
	if err != nil {
		return g, err
	}
	return ng, nil
}

// definiteRead marks a failed read as a definite failure of the increment
// (nothing was written); a stale-token refusal keeps its own meaning.
func definiteRead(err error) error {
	if errors.Is(err, lock.ErrStale) {
		return err
	}
	return lock.Definite(fmt.Errorf("read failed, nothing written: %w", err))
}
