package lock

import (
	"errors"
	"fmt"
	"testing"
)

// The history is built from these markers: a definite error is a fail, a
// broken one stops the worker, anything else is an unknown outcome. Each
// must survive wrapping with context.
func TestOutcomeMarkers(t *testing.T) {
	plain := errors.New("connection reset")
	for _, tc := range []struct {
		name             string
		err              error
		definite, broken bool
	}{
		{"plain", plain, false, false},
		{"definite", Definite(plain), true, false},
		{"wrapped definite", fmt.Errorf("acquire: %w", Definite(plain)), true, false},
		{"not acquired", ErrNotAcquired, true, false},
		{"not held, wrapped", fmt.Errorf("release: %w", ErrNotHeld), true, false},
		{"stale is plain", ErrStale, false, false},
		{"broken", Broken(plain), false, true},
		{"wrapped broken", fmt.Errorf("c1: %w", Broken(plain)), false, true},
		{"broken definite", Broken(Definite(plain)), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsDefinite(tc.err); got != tc.definite {
				t.Errorf("IsDefinite(%v) = %v, want %v", tc.err, got, tc.definite)
			}
			if got := IsBroken(tc.err); got != tc.broken {
				t.Errorf("IsBroken(%v) = %v, want %v", tc.err, got, tc.broken)
			}
		})
	}
	// The markers keep the cause reachable, for errors.Is in the design.
	if err := fmt.Errorf("c1: %w", Broken(Definite(plain))); !errors.Is(err, plain) || err.Error() != "c1: connection reset" {
		t.Errorf("marked error %q does not unwrap to its cause", err)
	}
}

// Reach calls the checkpoint hook with the point, and does nothing when no
// fault set one.
func TestReach(t *testing.T) {
	Config{}.Reach(CheckpointGranted)
	var got []string
	cfg := Config{Checkpoint: func(p string) { got = append(got, p) }}
	cfg.Reach(CheckpointGranted)
	cfg.Reach(CheckpointWaiting)
	if want := []string{CheckpointGranted, CheckpointWaiting}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("checkpoints %v, want %v", got, want)
	}
}
