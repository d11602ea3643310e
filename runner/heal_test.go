package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
)

// TestVerifyHealed leaves a server stopped, a link cut and slowed, and a
// clock moved, as a faulty fault would: the final heal must name each and
// undo it, and find nothing the second time.
func TestVerifyHealed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the clock shim with cc and starts a real redis-server; run without -short")
	}
	shim, err := cluster.BuildClockShim(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.New(t.TempDir())
	defer c.Stop()
	c.UseClockShim(shim)
	node, err := c.StartRedis(context.Background(), "redis-0", cluster.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	link, err := c.Link(cluster.LinkName("c0", node.Name), node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r := &run{}
	env := &faults.Env{Clients: clientSet{r}, Nodes: []*cluster.Node{node}, Links: c.Links()}

	if err := node.Process().Pause(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); !node.Process().Stopped(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("SIGSTOP did not stop the server")
		}
	}
	if err := link.Cut("partition"); err != nil {
		t.Fatal(err)
	}
	if err := link.Latency("latency", cluster.Requests, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if err := node.Clock.SetOffset(time.Hour); err != nil {
		t.Fatal(err)
	}
	err = r.verifyHealed(env, nil)
	if err == nil {
		t.Fatal("final heal found nothing")
	}
	for _, want := range []string{"redis-0 stopped", "link c0:redis-0 latency/latency-upstream+partition/cut-down+partition/cut-up", "redis-0 clock off by 1h0m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("final heal did not report %q: %v", want, err)
		}
	}
	if node.Process().Stopped() || len(link.Toxics()) > 0 || node.Clock.Offset() != 0 {
		t.Fatal("final heal left something in effect")
	}
	if err := r.verifyHealed(env, nil); err != nil {
		t.Fatalf("second check: %v", err)
	}
}
