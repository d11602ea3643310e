package cluster

import (
	"context"
	"slices"
	"testing"
	"time"
)

// leaders returns the nodes that say they lead.
func leaders(nodes []*Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		if n.Role() == RoleLeader {
			out = append(out, n)
		}
	}
	return out
}

// TestEtcdLeaderRole: a started etcd cluster has exactly one leader, and
// the role follows etcd: with the leader cut off from its peers (its peer
// link), the other two elect a new one, which faults aimed at "leader" then
// hit. Stopping the cluster ends every member.
func TestEtcdLeaderRole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real 3-member etcd cluster; run without -short")
	}
	c := New(t.TempDir())
	defer c.Stop()
	nodes, err := c.StartEtcd(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	ls := leaders(nodes)
	if len(ls) != 1 {
		t.Fatalf("%d leaders after start-up, want 1", len(ls))
	}
	old := ls[0]
	for _, l := range c.Links() {
		if l.Name == LinkName("peers", old.Name) {
			if err := l.Cut("test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls = leaders(nodes)
		if slices.ContainsFunc(ls, func(n *Node) bool { return n != old }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader 10 s after cutting %s off: leaders %v", old.Name, ls)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if exited, _ := n.Process().Exited(); !exited {
			t.Errorf("%s still runs after Stop", n.Name)
		}
	}
}
