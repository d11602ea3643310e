package cluster

import (
	"sync/atomic"
	"testing"
)

// countingBackend runs servers as local processes and counts its closes.
type countingBackend struct {
	local
	closes *atomic.Int32
}

func (b countingBackend) Close() error { b.closes.Add(1); return nil }

// A backend registered by another package (cluster/container's docker
// removes its containers as it closes) is closed exactly once: by Stop, or
// by KillAll on a path that never reached Stop.
func TestKillAllClosesOpenBackends(t *testing.T) {
	var closes atomic.Int32
	RegisterBackend("counting-test", func(string) (Backend, error) { return countingBackend{closes: &closes}, nil })
	stopped, err := NewOn(t.TempDir(), "counting-test")
	if err != nil {
		t.Fatal(err)
	}
	abandoned, err := NewOn(t.TempDir(), "counting-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := closes.Load(); n != 1 {
		t.Fatalf("after Stop: %d closes, want 1", n)
	}
	KillAll()
	if n := closes.Load(); n != 2 {
		t.Fatalf("after KillAll: %d closes, want 2 (the abandoned cluster's)", n)
	}
	if err := abandoned.Stop(); err != nil {
		t.Fatal(err)
	}
	KillAll()
	if n := closes.Load(); n != 2 {
		t.Errorf("a backend closed again: %d closes, want 2", n)
	}
}
