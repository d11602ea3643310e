package explore

import (
	"slices"
	"testing"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/seed"
)

// TestSearchTriesEveryCheckpoint: for a program that announces checkpoints,
// the search offers the fault that strikes at one, draws each checkpoint
// the design lists, and the run it makes strikes there; a design without
// any skips that fault, saying why. Other faults draw as they did.
func TestSearchTriesEveryCheckpoint(t *testing.T) {
	base := scenario.Defaults()
	base.Impl, base.Workload, base.ExecServers = "exec", "counter", "redis-single"
	base.ExecCmd = "python3 tests/protocol/zoo.py token-after"
	points := []string{"after-set", "before-del", `nach "dem" <SET>`}
	base.ExecCheckpoints = points

	fs, skipped, err := candidateFaults(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(fs, func(f faults.Fault) bool { return f.Traits().AtCheckpoint })
	if i < 0 {
		t.Fatalf("no candidate strikes at a checkpoint; skipped: %v", skipped)
	}
	at := fs[i]
	r := seed.Stream(1, seed.Explore, 0)
	tried := map[string]int{}
	k := fresh(r, at, nil, nil, points, holdRange[1])
	for n := range 60 {
		if n%2 == 1 {
			k = mutate(r, k, at, nil, points, holdRange[1])
		} else {
			k = fresh(r, at, nil, nil, points, holdRange[1])
		}
		c := k.Config(base, 7)
		if c.Checkpoint != k.Checkpoint || !slices.Contains(points, c.Checkpoint) {
			t.Fatalf("%s: run strikes at %q, not one of %q", k, c.Checkpoint, points)
		}
		if _, err := runner.Resolve(c); err != nil {
			t.Fatalf("%s does not resolve: %v", k, err)
		}
		tried[k.Checkpoint]++
	}
	if len(tried) != len(points) {
		t.Fatalf("drew %v, want each of %q", tried, points)
	}

	holder := mustFault(t, "pause-holder")
	with, without := seed.Stream(3, seed.Explore, 0), seed.Stream(3, seed.Explore, 0)
	for range 20 {
		a, b := fresh(with, holder, nil, nil, points, holdRange[1]), fresh(without, holder, nil, nil, nil, holdRange[1])
		if a != b || a.Checkpoint != "" {
			t.Fatalf("pause-holder drew %s with checkpoints listed, %s without", a, b)
		}
	}

	base.ExecCheckpoints = nil
	fs, skipped, err = candidateFaults(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(fs, func(f faults.Fault) bool { return f.Traits().AtCheckpoint }) || skipped[at.Name()] == "" {
		t.Fatalf("without checkpoints, %s is still a candidate (skipped: %v)", at.Name(), skipped)
	}
}

// TestSearchTriesKernelFaultsInTheLab: in the lab (--network netns) the
// search offers the faults only the kernel makes (one-way partitions,
// packet loss); on the proxy it skips them, saying why.
func TestSearchTriesKernelFaultsInTheLab(t *testing.T) {
	kernel := []string{"partition-inbound", "partition-outbound", "loss"}
	for _, tc := range []struct {
		network string
		offered bool
	}{
		{runner.NetworkNetns, true},
		{runner.NetworkProxy, false},
	} {
		base := scenario.Defaults()
		base.Impl, base.Network = "redis-single", tc.network
		fs, skipped, err := candidateFaults(base, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.network, err)
		}
		for _, name := range kernel {
			offered := slices.ContainsFunc(fs, func(f faults.Fault) bool { return f.Name() == name })
			if offered != tc.offered || offered == (skipped[name] != "") {
				t.Errorf("--network %s: %s offered %v (skipped: %q), want %v", tc.network, name, offered, skipped[name], tc.offered)
			}
		}
	}
}
