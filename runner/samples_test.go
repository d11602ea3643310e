package runner

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
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
		// Two findings of a leak: the port's count and the server's own
		// (Redis counts its connections).
		if p := sum.Procs[1]; p.Name != "redis-0" || p.ClientsStart != 0 || p.ClientsPeak != clients || p.ClientsEnd != leaked || p.LeakedClients != leaked ||
			p.Sessions == nil || p.Sessions.Start != 0 || p.Sessions.Peak != clients || p.Sessions.Leaked != leaked ||
			len(sum.Leaks) != 2*min(leaked, 1) || p.PeakRSS < 1<<20 {
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

// TestSamplerSeesLeases: the sampler of a real etcd cluster records its
// leases, the cluster's, on one member. Leases revoked before the end
// leave none, and no leak; a lease granted for a minute and never revoked
// by a client that exited, or one kept alive by a process still running
// at the last sample (etcd-io/etcd#17470), is a leak. About 10 s.
func TestSamplerSeesLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd cluster; run without -short")
	}
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		t.Fatal("etcdctl is not installed (etcd-client): ", err)
	}
	c := cluster.New(t.TempDir())
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes, err := c.StartEtcd(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	addr := nodes[0].Addr()
	client := func(t *testing.T) *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return cli
	}
	grant := func(t *testing.T) (*clientv3.Client, clientv3.LeaseID) {
		cli := client(t)
		l, err := cli.Grant(ctx, 60)
		if err != nil {
			t.Fatal(err)
		}
		return cli, l.ID
	}
	cases := []struct {
		name string
		// leak opens two leases and closes them, or leaves one behind as
		// the case says; what it returns runs after the last sample.
		leak   func(t *testing.T) func()
		leaked int
	}{
		{"revoked", func(t *testing.T) func() {
			a, la := grant(t)
			b, lb := grant(t)
			time.Sleep(300 * time.Millisecond) // some samples with the leases on
			for _, x := range []struct {
				cli *clientv3.Client
				id  clientv3.LeaseID
			}{{a, la}, {b, lb}} {
				if _, err := x.cli.Revoke(ctx, x.id); err != nil {
					t.Fatal(err)
				}
				x.cli.Close()
			}
			return func() {}
		}, 0},
		{"granted for a minute, never revoked", func(t *testing.T) func() {
			a, la := grant(t)
			b, lb := grant(t)
			time.Sleep(300 * time.Millisecond)
			if _, err := a.Revoke(ctx, la); err != nil {
				t.Fatal(err)
			}
			a.Close()
			b.Close()       // exits without revoking its lease
			return func() { // the next case starts with none
				c := client(t)
				c.Revoke(ctx, lb)
				c.Close()
			}
		}, 1},
		{"kept alive by a process left running", func(t *testing.T) func() {
			out, err := exec.CommandContext(ctx, etcdctl, "--endpoints="+addr, "lease", "grant", "5").CombinedOutput()
			if err != nil {
				t.Fatalf("etcdctl lease grant: %v: %s", err, out)
			}
			// "lease 694d8a5b3e1f2c0b granted with TTL(5s)"
			f := strings.Fields(string(out))
			if len(f) < 2 || f[0] != "lease" {
				t.Fatalf("etcdctl lease grant said %q", out)
			}
			keep := exec.Command(etcdctl, "--endpoints="+addr, "lease", "keep-alive", f[1])
			if err := keep.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			return func() {
				keep.Process.Kill()
				keep.Wait()
				exec.Command(etcdctl, "--endpoints="+addr, "lease", "revoke", f[1]).Run()
			}
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := startSamplerEvery(dir, c, slog.Default(), 50*time.Millisecond, maxSamples, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			after := tc.leak(t)
			err = s.stop(false)
			after()
			if err != nil {
				t.Fatal(err)
			}
			// The next case starts with none: the leases of this one are revoked.
			defer func() {
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
					if n, err := nodes[0].Sessions(ctx); err == nil && n == 0 {
						return
					}
				}
				t.Fatal("the leases of the case outlived it")
			}()
			samples, err := reports.ReadSamples(dir)
			if err != nil {
				t.Fatal(err)
			}
			sum := reports.Summarize(samples)
			var counted []string
			for _, p := range sum.Procs {
				if p.Sessions != nil {
					counted = append(counted, p.Name)
				}
			}
			if len(counted) != 1 {
				t.Fatalf("leases counted on %v, want one member of the 3: %+v", counted, sum)
			}
			p := sum.Procs[slices.IndexFunc(sum.Procs, func(p reports.ProcResources) bool { return p.Sessions != nil })]
			ss := p.Sessions
			// One finding of leases; the keep-alive's process holds a
			// connection too, which is a finding of its own.
			found := 0
			for _, l := range sum.Leaks {
				if strings.Contains(l, "more session(s) (leases) at the end") {
					found++
				}
			}
			if ss.What != "leases" || ss.Start != 0 || ss.Peak < 1 || ss.End != tc.leaked || ss.Leaked != tc.leaked || found != min(tc.leaked, 1) {
				t.Errorf("%s: sessions %+v, leaks %q; want 0 → %d leaked", p.Name, *ss, sum.Leaks, tc.leaked)
			}
		})
	}
}

// TestSamplerTalliesTheHistory: each sample records the run's figures as
// the history stands when it is taken: nothing before the history exists,
// then its operations, lost updates and strikes, one of which hit.
func TestSamplerTalliesTheHistory(t *testing.T) {
	dir := t.TempDir()
	s, err := startSamplerEvery(dir, cluster.New(t.TempDir()), slog.Default(), time.Hour, maxSamples, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) int64 { return 1e12 + ms*1e6 }
	rec := func(p int, typ history.Type, f string, ms int64, v ...int64) history.Record {
		r := history.Record{Process: p, Type: typ, F: f, Key: "lock-0", Time: at(ms)}
		if len(v) > 0 {
			r.Value = history.Int64(v[0])
		}
		return r
	}
	recs := []history.Record{
		rec(0, history.Invoke, history.FAcquire, 0), rec(0, history.OK, history.FAcquire, 1),
		{Process: history.NemesisProcess, Type: history.FaultStart, F: "fault", Fault: "pause-holder", Target: "c0", Aim: history.AimHolder, Time: at(2)},
		rec(1, history.Invoke, history.FAcquire, 3), rec(1, history.OK, history.FAcquire, 4),
		rec(1, history.OK, history.FIncr, 5, 7), rec(0, history.OK, history.FIncr, 6, 7),
		{Process: history.NemesisProcess, Type: history.FaultStart, F: "fault", Fault: "pause-holder", Target: "c2", Aim: history.AimHolder, Time: at(7)},
	}
	var b []byte
	for _, r := range recs {
		b = append(history.AppendJSON(b, &r), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(true); err != nil {
		t.Fatal(err)
	}
	samples, err := reports.ReadSamples(dir)
	if err != nil || len(samples) != 2 {
		t.Fatalf("%d samples (%v), want the first and the last", len(samples), err)
	}
	for i, want := range []reports.RunFigures{{}, {Ops: 4, Lost: 1, Strikes: 2, Effective: 1}} {
		if got := samples[i].Run; got == nil || *got != want {
			t.Errorf("sample %d: run figures %+v, want %+v", i, got, want)
		}
	}
}
