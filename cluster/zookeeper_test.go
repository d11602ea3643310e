package cluster

import (
	"context"
	"testing"
	"time"
)

// TestZooKeeperEnsemble starts a real three-server ensemble, then cuts the
// leader's links (clients and peers): the two others must elect a new
// leader among themselves, which they can only do if the peer links are
// the paths they really use. Healing lets the old leader rejoin.
func TestZooKeeperEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real 3-server ZooKeeper ensemble; run without -short")
	}
	c := New(t.TempDir())
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	e, err := c.StartZooKeeper(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ensemble serving after %s", time.Since(start).Round(time.Millisecond))
	leader := e.leader(t)
	for _, l := range c.Links() {
		if l.From == leader.Name || l.To == leader.Name {
			if err := l.Cut("test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	cut := time.Now()
	for {
		if n := e.leader(t); n != nil && n != leader {
			t.Logf("%s cut off; %s leads after %s", leader.Name, n.Name, time.Since(cut).Round(time.Millisecond))
			break
		}
		if time.Since(cut) > 20*time.Second {
			t.Fatalf("no new leader 20 s after cutting %s off", leader.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, l := range c.Links() {
		if err := l.Heal("test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.waitServing(ctx); err != nil {
		t.Fatalf("the old leader did not rejoin: %v", err)
	}
}

// leader returns the one server that says it leads and that the others
// follow, or nil.
func (e *Ensemble) leader(t *testing.T) *Node {
	t.Helper()
	var leader *Node
	for _, n := range e.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		mode, err := zooKeeperMode(ctx, n.Addr())
		cancel()
		if err == nil && mode == "leader" {
			leader = n
		}
	}
	return leader
}
