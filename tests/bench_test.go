package tests

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
)

// Both sides of BenchmarkLockCycles do the same work: 8 clients, 8 keys
// picked at random, SET NX PX until granted (1–2 ms between tries), then a
// Lua compare-and-delete. The ratio of their cycles/s is the harness's cost.
const (
	benchClients = 8
	benchKeys    = 8
	benchRun     = 10 * time.Second
)

// BenchmarkLockCycles compares lock cycles per second driven through the
// whole harness (worker processes, history, checks) with a plain go-redis
// loop in one process. Each iteration runs the loops one after the other,
// so all of them see the same load however it drifts: the machine this
// runs on is shared, and loops measured minutes apart gave ratios from
// 0.14× to 0.42×. Run with -benchtime=3x for three iterations.
//
// The harness runs twice per iteration: as a control run (--fault none),
// whose clients dial the server directly, and with a link fault that
// changes nothing (latency 0 ms), whose clients go through the links as in
// every run with link faults. ratio is the control run's total rate over
// the plain loop's, ratio-min and ratio-max the extremes of single
// iterations (the noise), ratio-linked the linked run's total rate over
// the plain loop's. A third harness run is the control run in the kernel
// lab (--network netns: servers and clients in namespaces of their own,
// over veths and a bridge); ratio-netns is its rate over the direct
// control run's.
func BenchmarkLockCycles(b *testing.B) {
	c := cluster.New(b.TempDir())
	defer c.Stop()
	node, err := c.StartRedis(context.Background(), "redis", cluster.RedisOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var harness, linked, lab, plain float64
	lo, hi := math.Inf(1), 0.0
	n := 0
	for b.Loop() {
		h := harnessCycles(b)
		l := harnessCycles(b, "--fault", "latency", "--latency", "0s", "--jitter", "0s")
		k := harnessCycles(b, "--network", "netns")
		p := plainCycles(b, node.Addr())
		n++
		b.Logf("iteration %d: harness %.0f cycles/s, linked %.0f, netns %.0f, plain %.0f; ratio %.2f, linked %.2f, netns/harness %.2f",
			n, h, l, k, p, h/p, l/p, k/h)
		harness += h
		linked += l
		lab += k
		plain += p
		lo, hi = min(lo, h/p), max(hi, h/p)
	}
	b.ReportMetric(harness/float64(n), "harness-cycles/s")
	b.ReportMetric(linked/float64(n), "linked-cycles/s")
	b.ReportMetric(plain/float64(n), "plain-cycles/s")
	b.ReportMetric(harness/plain, "ratio")
	b.ReportMetric(lo, "ratio-min")
	b.ReportMetric(hi, "ratio-max")
	b.ReportMetric(linked/plain, "ratio-linked")
	b.ReportMetric(lab/float64(n), "netns-cycles/s")
	b.ReportMetric(lab/harness, "ratio-netns")
}

// harnessCycles runs locktest for benchRun with the extra flags and returns
// the releases it recorded per second of history.
func harnessCycles(b *testing.B, extra ...string) float64 {
	store := filepath.Join(b.TempDir(), "store")
	args := append([]string{"run", "--impl", "redis-single", "--workload", "mutex",
		"--clients", fmt.Sprint(benchClients), "--keys", fmt.Sprint(benchKeys), "--duration", benchRun.String(),
		"--hold-min", "0s", "--hold-max", "0s", "--retry-min", "1ms", "--retry-jitter", "1ms"}, extra...)
	r := locktestIn(b, store, args...)
	if r.code != 0 {
		b.Fatalf("harness run exit %d: %s", r.code, r.stderr)
	}
	res := r.results(b)
	return float64(res.Metrics.Releases.OK) / res.Metrics.SpanSeconds
}

var benchRelease = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func plainCycles(b *testing.B, addr string) float64 {
	var cycles atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), benchRun)
	defer cancel()
	var wg sync.WaitGroup
	for i := range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1, DisableIdentity: true})
			defer rdb.Close()
			rng := rand.New(rand.NewPCG(1, uint64(i)))
			for n := 0; ctx.Err() == nil; n++ {
				key, owner := fmt.Sprintf("lock-%d", rng.IntN(benchKeys)), fmt.Sprintf("c%d-%d", i, n)
				for ctx.Err() == nil {
					ok, err := rdb.SetNX(ctx, key, owner, time.Second).Result()
					if err == nil && ok {
						break
					}
					time.Sleep(time.Millisecond + time.Duration(rng.Int64N(int64(time.Millisecond))))
				}
				if benchRelease.Run(ctx, rdb, []string{key}, owner).Err() == nil {
					cycles.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(cycles.Load()) / benchRun.Seconds()
}

// BenchmarkCheck60s times both porcupine checks on the history of a 60 s
// counter run with 5 clients and the pause-holder fault.
func BenchmarkCheck60s(b *testing.B) {
	// The 60 s run happens once, however often the benchmark body runs.
	history60s.Do(func() {
		store := filepath.Join(os.TempDir(), fmt.Sprintf("locktest-bench-%d", os.Getpid()))
		defer os.RemoveAll(store)
		r := locktestIn(b, store, "run", "--impl", "redis-single", "--workload", "counter",
			"--fault", "pause-holder", "--duration", "60s")
		if r.code != 1 {
			b.Fatalf("60s run exit %d, want 1 (lost updates)", r.code)
		}
		recs60s, err60s = history.ReadFile(filepath.Join(store, "latest", "history.jsonl"))
	})
	if err60s != nil {
		b.Fatal(err60s)
	}
	b.ReportMetric(float64(len(recs60s)), "records")
	b.ResetTimer()
	for range b.N {
		rep := checker.Check(recs60s, checker.Options{Timeout: time.Minute})
		if rep.Resource.Verdict != checker.Invalid {
			b.Fatalf("resource verdict %s", rep.Resource.Verdict)
		}
	}
}

var (
	history60s sync.Once
	recs60s    []history.Record
	err60s     error
)
