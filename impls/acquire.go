package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktest/locktest/lock"
)

// tryResult is the outcome of one attempt to take a lock.
type tryResult int

const (
	tryGranted tryResult = iota
	tryRefused           // someone else holds it: definite
	tryUnknown           // the request may or may not have taken effect
	tryAbort             // definitely not granted, and the design gives up at once
)

// sessionTry judges one try of a lock a server ties to the client's
// session (an advisory lock, GET_LOCK): granted when the server said so,
// refused when it said no or the error is definite, unknown otherwise.
func sessionTry(granted bool, err error, owner string) (lock.Grant, tryResult, error) {
	switch {
	case err == nil && granted:
		return lock.Grant{Owner: owner}, tryGranted, nil
	case err == nil:
		return lock.Grant{}, tryRefused, nil
	case lock.IsDefinite(err):
		return lock.Grant{}, tryRefused, err
	}
	return lock.Grant{}, tryUnknown, err
}

// acquireLoop is the pull-mode acquire of source S0: try, and if refused
// sleep a random time in [RetryMin, RetryMin+RetryJitter) and try again,
// until the deadline D = now + AcquireTimeout. The random sleep keeps
// waiters from retrying in lockstep.
//
// If any try had an unknown outcome and no later try was granted, the
// acquire as a whole is unknown: that try may have set the key.
func acquireLoop(ctx context.Context, cfg lock.Config, rng *rand.Rand, try func(ctx context.Context) (lock.Grant, tryResult, error)) (lock.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.AcquireTimeout)
	defer cancel()
	var unknown error
	for {
		g, res, err := try(ctx)
		switch res {
		case tryGranted:
			return g, nil
		case tryUnknown:
			unknown = err
		case tryAbort:
			if unknown != nil {
				return lock.Grant{}, fmt.Errorf("acquire: %w, after a try of unknown outcome: %w", err, unknown)
			}
			return lock.Grant{}, lock.Definite(fmt.Errorf("acquire: %w", err))
		}
		sleep := cfg.RetryMin
		if cfg.RetryJitter > 0 {
			sleep += time.Duration(rng.Int64N(int64(cfg.RetryJitter)))
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			if unknown != nil {
				return lock.Grant{}, fmt.Errorf("acquire: deadline passed after a try of unknown outcome: %w", unknown)
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return lock.Grant{}, lock.ErrNotAcquired
			}
			return lock.Grant{}, lock.Definite(fmt.Errorf("acquire: %w", ctx.Err()))
		case <-t.C:
		}
	}
}
