package runner

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/history"
)

// TestHealStartOnlyForRestarts: a fault's stop says when its heal began
// only when the heal restarted something (a real redis-server, killed and
// started again), never for a heal that restarted nothing however long it
// took (a paused server continued on a loaded machine): the summary calls
// that time a restart's.
func TestHealStartOnlyForRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real redis-server; run without -short")
	}
	c := cluster.New(t.TempDir())
	defer c.Stop()
	node, err := c.StartRedis(context.Background(), "redis-0", cluster.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	hist, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{hist: hist, cluster: c, log: slog.New(slog.DiscardHandler)}
	env := r.faultEnv([]*cluster.Node{node})
	r.recordFaults(env, []*cluster.Node{node}, history.AimServers)

	env.Started(faults.Strike{Fault: "pause-node", Target: node.Name, Asked: time.Second})
	if err := node.Process().Pause(); err != nil {
		t.Fatal(err)
	}
	if err := node.Process().Resume(); err != nil {
		t.Fatal(err)
	}
	env.Stopped("pause-node", node.Name, 40*time.Millisecond) // a slow SIGCONT

	env.Started(faults.Strike{Fault: "kill-node", Target: node.Name, Asked: time.Second})
	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	healStart := time.Now()
	if err := node.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	env.Stopped("kill-node", node.Name, time.Since(healStart))
	if err := hist.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stops := map[string]history.Record{}
	for _, rec := range recs {
		if rec.Type == history.FaultStop {
			stops[rec.Fault] = rec
		}
	}
	if hs := stops["pause-node"].HealStart; hs != 0 {
		t.Errorf("the pause's stop says its heal began %.3f s before it: nothing was restarted", float64(stops["pause-node"].Time-hs)/1e9)
	}
	if k := stops["kill-node"]; k.HealStart == 0 || k.HealStart >= k.Time {
		t.Errorf("the kill's stop does not say when its restart began: %+v", k)
	}
}
