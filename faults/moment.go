package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A lock moment is a point in a lock's life at which a fault strikes. A
// wall-clock schedule lands wherever the clients happen to be, and most of
// the time that is nowhere that matters: an anomaly needs the fault inside
// a narrow window (the holder between its read and its write, a lease about
// to run out, a waiter queued behind a holder). Aligning each strike to such
// an event makes the window the common case instead of a lucky one.
const (
	// MomentAny keeps the wall-clock schedule alone.
	MomentAny = "any"
	// MomentGrant: a client was just granted the lock and entered its
	// critical section (counter: it has read and not yet written).
	MomentGrant = "grant"
	// MomentExpiry: a holder's lease is about to run out, 75–95% of the
	// TTL after its grant.
	MomentExpiry = "near-expiry"
	// MomentAcquire: a client just asked for the lock; under contention it
	// queues behind the holder.
	MomentAcquire = "acquire"
	// MomentRelease: a holder just began to give the lock back.
	MomentRelease = "release"
)

// Moments lists the lock moments, MomentAny first.
var Moments = []string{MomentAny, MomentGrant, MomentExpiry, MomentAcquire, MomentRelease}

// CheckMoment refuses an unknown moment name.
func CheckMoment(m string) error {
	if m == "" || slices.Contains(Moments, m) {
		return nil
	}
	return fmt.Errorf("unknown fault moment %q (valid: %s)", m, strings.Join(Moments, ", "))
}

// NextHolder waits for the next client to enter its critical section,
// skipping clients that are paused or dead, and returns its index.
func (e *Env) NextHolder(ctx context.Context) (int, error) {
	return e.Await(ctx, MomentGrant)
}

// align waits for the strike's lock moment after the quiet time, and
// remembers whose moment it was: a fault aimed at the holder then hits
// that client (the grantee, the waiter, the releaser). It returns false
// when ctx ended first.
func (e *Env) align(ctx context.Context) bool {
	e.momentClient = -1
	kind := e.Moment
	switch kind {
	case "", MomentAny:
		return true
	case MomentExpiry:
		kind = MomentGrant
	}
	c, err := e.Await(ctx, kind)
	if err != nil {
		return false
	}
	e.momentClient = c
	if e.Moment == MomentExpiry {
		frac := 0.75 + 0.2*e.Rand.Float64()
		return sleep(ctx, time.Duration(frac*float64(e.TTL)))
	}
	return true
}
