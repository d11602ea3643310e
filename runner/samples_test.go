package runner

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/reports"
)

// TestThin keeps every other sample from the first, and the newest of an
// odd count.
func TestThin(t *testing.T) {
	for _, tc := range []struct {
		times []int64
		want  []int64
	}{
		{[]int64{1}, []int64{1}},
		{[]int64{1, 2}, []int64{1}},
		{[]int64{1, 2, 3}, []int64{1, 3}},
		{[]int64{1, 2, 3, 4, 5, 6, 7}, []int64{1, 3, 5, 7}},
	} {
		var in []reports.Sample
		for _, tm := range tc.times {
			in = append(in, reports.Sample{Time: tm})
		}
		var got []int64
		for _, s := range thin(in) {
			got = append(got, s.Time)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("thin(%v) = %v, want %v", tc.times, got, tc.want)
		}
	}
}

// TestSamplerBounded: however many samples a run takes, the file keeps at
// most the most it may, spans the whole run, and the time between samples
// doubles at each thinning. A cluster without servers: the coordinator's
// samples only.
func TestSamplerBounded(t *testing.T) {
	for _, tc := range []struct {
		taken, most int
		kept        int
		every       time.Duration
	}{
		{taken: 5, most: 8, kept: 5, every: time.Hour},
		{taken: 9, most: 8, kept: 5, every: 2 * time.Hour},
		{taken: 20, most: 8, kept: 8, every: 8 * time.Hour},
		{taken: 40, most: 8, kept: 8, every: 256 * time.Hour},
	} {
		dir := t.TempDir()
		// An hour apart: the loop never samples, the test adds them.
		s, err := startSamplerEvery(dir, cluster.New(t.TempDir()), slog.Default(), time.Hour, tc.most, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		first := s.samples[0].Time
		for range tc.taken - 2 {
			s.add(s.take())
		}
		if err := s.stop(true); err != nil {
			t.Fatal(err)
		}
		got, err := reports.ReadSamples(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.kept || got[0].Time != first || got[len(got)-1].Time != s.samples[len(s.samples)-1].Time || s.every != tc.every {
			t.Errorf("%d samples taken, at most %d: %d in the file, first %v, every %s; want %d, the first, the last, every %s",
				tc.taken, tc.most, len(got), got[0].Time == first, s.every, tc.kept, tc.every)
		}
		if got[0].Procs[0].Name != reports.CoordinatorName || got[0].Procs[0].RSS == 0 || got[0].Procs[0].Heap == 0 {
			t.Errorf("the coordinator's sample: %+v", got[0].Procs)
		}
	}
}

// TestSamplerSeesClients: the sampler of a real redis-server records the
// connections of the clients that dial it, none at the start, and its
// memory. Clients that close before the end leave none at the end; kept
// open, the last sample waits for them to go, then finds them leaked.
// About 3 s.
func TestSamplerSeesClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real redis-server; run without -short")
	}
	c := cluster.New(t.TempDir())
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.StartRedis(ctx, "redis-0", cluster.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const clients = 4
	for _, closeFirst := range []bool{false, true} {
		dir := t.TempDir()
		s, err := startSamplerEvery(dir, c, slog.Default(), 50*time.Millisecond, maxSamples, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rdbs []*redis.Client
		for range clients {
			rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), PoolSize: 1})
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdbs = append(rdbs, rdb)
		}
		time.Sleep(300 * time.Millisecond) // some samples with the clients on
		closeAll := func() {
			for _, rdb := range rdbs {
				rdb.Close()
			}
		}
		if closeFirst {
			closeAll()
		}
		if err := s.stop(false); err != nil {
			t.Fatal(err)
		}
		closeAll()
		samples, err := reports.ReadSamples(dir)
		if err != nil {
			t.Fatal(err)
		}
		sum := reports.Summarize(samples)
		leaked := clients
		if closeFirst {
			leaked = 0
		}
		if p := sum.Procs[1]; p.Name != "redis-0" || p.ClientsStart != 0 || p.ClientsPeak != clients || p.ClientsEnd != leaked || p.LeakedClients != leaked ||
			len(sum.Leaks) != min(leaked, 1) || p.PeakRSS < 1<<20 {
			t.Errorf("%d clients connected, closed before the end %v: %+v", clients, closeFirst, sum)
		}
		if closeFirst {
			continue
		}
		// Until the server let the clients go: the next run starts at 0.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			pid, _ := n.Process().HostPid()
			if st, err := cluster.ReadProcStat(pid, n.Port); err == nil && st.Clients == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("redis-server holds the closed clients' connections 5 s on")
			}
		}
	}
}
