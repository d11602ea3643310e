package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
)

// TestZooKeeperPauseHolder reproduces docs/anomalies.md row 16 on a real
// three-server ensemble: the holder is paused (SIGSTOP) past its session
// timeout (--ttl), the ensemble expires the session and deletes its
// znode, the next contender's turn comes, and the paused client, resumed,
// still believes it holds the lock. Unfenced, its write loses an update;
// fenced by the znode's sequence number, the resource rejects it.
func TestZooKeeperPauseHolder(t *testing.T) {
	for _, tc := range []struct {
		impl string
		code int
		data checker.Verdict
	}{
		{"zookeeper", 1, checker.Invalid},
		{"zookeeper-fenced", 0, checker.Valid},
	} {
		t.Run(tc.impl, func(t *testing.T) {
			r := locktest(t, "run", "--impl", tc.impl, "--workload", "counter", "--fault", "pause-holder",
				"--clients", "5", "--duration", "10s", "--seed", "1", "--fault-interval", "2s")
			r.assertNothingLeft(t)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			res := r.results(t)
			// Both: two clients believed they held the lock at once.
			if res.Checks.Mutex.Verdict != checker.Invalid {
				t.Errorf("mutex check %s, want invalid: the pause did not outlast the session", res.Checks.Mutex.Verdict)
			}
			if res.Checks.Resource.Verdict != tc.data {
				t.Errorf("resource check %s, want %s", res.Checks.Resource.Verdict, tc.data)
			}
			// The resumed holder's release finds its znode gone with its
			// session: the service knew, the client did not.
			if res.Metrics.Releases.Fail == 0 {
				t.Errorf("no release was refused: no session expired under the pause")
			}
			switch tc.data {
			case checker.Invalid:
				if res.Checks.Stats.Lost == 0 {
					t.Errorf("resource invalid but no update lost: %+v", res.Checks.Stats)
				}
			case checker.Valid:
				h := readRunHistory(t, r)
				if res.Checks.Stats.Rejected == 0 || len(h.reusedTokens()) > 0 {
					t.Errorf("want stale writes rejected and no sequence number reused: %+v, reused %v",
						res.Checks.Stats, h.reusedTokens())
				}
			}
		})
	}
}

// TestZooKeeperHerd compares the recipe's two ways to wait (source S3):
// watching the predecessor wakes one client per release; watching the
// lock's child list wakes every waiter, and each re-reads the list. With
// eight contenders the herd must cost the ensemble several times as many
// requests and notifications per acquisition, and stay just as safe.
func TestZooKeeperHerd(t *testing.T) {
	cost := map[string]float64{}
	for _, impl := range []string{"zookeeper", "zookeeper-herd"} {
		r := locktest(t, "run", "--impl", impl, "--workload", "counter", "--fault", "none",
			"--clients", "8", "--duration", "6s", "--seed", "1")
		r.assertNothingLeft(t)
		if r.code != 0 {
			t.Fatalf("%s: exit %d, want 0", impl, r.code)
		}
		m := r.results(t).Metrics
		if m.Acquires.OK == 0 {
			t.Fatalf("%s: no acquisition", impl)
		}
		cost[impl] = m.CommandsPerAcquisition
	}
	t.Logf("store requests + notifications per acquisition: zookeeper %.1f, zookeeper-herd %.1f",
		cost["zookeeper"], cost["zookeeper-herd"])
	if cost["zookeeper"] < 3 || cost["zookeeper-herd"] < 2*cost["zookeeper"] {
		t.Fatalf("herd costs %.1f per acquisition against %.1f: want at least twice as much",
			cost["zookeeper-herd"], cost["zookeeper"])
	}
}

// TestZooKeeperLeaderFaults kills or isolates the ensemble's leader of the
// moment ("primary"): the ensemble elects another and the fenced lock keeps
// the data safe, and the time until the next acquisition is reported.
func TestZooKeeperLeaderFaults(t *testing.T) {
	for _, fault := range []string{"kill-node", "partition"} {
		t.Run(fault, func(t *testing.T) {
			r := locktest(t, "run", "--impl", "zookeeper-fenced", "--workload", "counter", "--fault", fault,
				"--fault-target", "primary", "--clients", "5", "--duration", "12s", "--seed", "1", "--fault-interval", "3s")
			r.assertNothingLeft(t)
			if r.code != 0 {
				t.Fatalf("exit %d, want 0", r.code)
			}
			res := r.results(t)
			assertHealed(t, res.Checks.Faults)
			var recovered []string
			for _, rec := range res.Metrics.Recoveries {
				if !strings.HasPrefix(rec.Target, "zk-") {
					t.Fatalf("%s hit %s, not a ZooKeeper server", rec.Fault, rec.Target)
				}
				if rec.NextAcquireMs != nil {
					recovered = append(recovered, rec.Target+" "+time.Duration(*rec.NextAcquireMs*1e6).Round(time.Millisecond).String())
				}
			}
			if len(recovered) == 0 {
				t.Fatalf("no acquisition after any %s of the leader: %+v", fault, res.Metrics.Recoveries)
			}
			if !strings.Contains(r.stdout, "recovery  next acquire") {
				t.Fatalf("the summary reports no recovery time:\n%s", r.stdout)
			}
			t.Logf("next acquisition after each %s of the leader: %s", fault, strings.Join(recovered, ", "))
		})
	}
}

// TestPostgresKillHolder is docs/anomalies.md row 17 as a suite: the holder of the
// unique-index lock is killed inside its critical section. Nothing ever
// deletes its row, so mutual exclusion holds and the lock is never
// available again. The expectation "never recovers" passes, and a bound on
// recovery fails, saying why: liveness is judged, not assumed.
func TestPostgresKillHolder(t *testing.T) {
	file, out := writeSuite(t, `name: row17
defaults:
  impl: postgres-unique
  workload: counter
  faults: kill-holder
  duration: 8s
  fault_interval: 1500ms
  clients: 4
scenarios:
  - name: never-again
    anomaly: 17
    expect: {verdict: safe, mutex: safe, never_recovers: true}
  - name: claimed-to-recover
    expect: {verdict: safe, max_recovery: 3s}
`)
	r := locktest(t, "suite", "run", file, "--out", out, "--parallel", "2")
	assertNothingLeft(t, out, binary)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (the recovery bound must fail)", r.code)
	}
	j := readJUnit(t, out).Suites[0]
	for _, c := range j.Cases {
		switch {
		case strings.HasPrefix(c.Name, "never-again") && c.Failure != nil:
			t.Errorf("row 17 did not hold: %s\n%s", c.Failure.Message, c.Failure.Body)
		case strings.HasPrefix(c.Name, "claimed-to-recover") &&
			(c.Failure == nil || !strings.Contains(c.Failure.Body+c.Failure.Message, "never acquired again")):
			t.Errorf("a lock that never came back passed a recovery bound: %+v", c.Failure)
		}
	}
	// The run's own summary says it plainly.
	summary, err := os.ReadFile(filepath.Join(out, "runs", "never-again-seed1", "never-again", "latest", "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "kill-holder on c") || !strings.Contains(string(summary), "never in the") {
		t.Fatalf("the summary does not say the lock never came back:\n%s", summary)
	}
}

// TestServersGoWithTheCoordinator: ZooKeeper's JVMs and PostgreSQL (run
// as another user, which must not cost it its parent-death signal) go
// when the coordinator is SIGKILLed mid-run, with a client paused.
func TestServersGoWithTheCoordinator(t *testing.T) {
	for _, impl := range []string{"zookeeper", "postgres-unique"} {
		t.Run(impl, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			cmd := exec.Command(binary, "run", "--impl", impl, "--fault", "pause-holder", "--fault-interval", "500ms",
				"--fault-duration", "20s", "--duration", "60s", "--store", store)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitForFault(t, filepath.Join(store, "latest", "history.jsonl"))
			if len(ourProcesses(t, store)) == 0 {
				t.Fatal("found no process of the run: the leftover check would prove nothing")
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			assertNothingLeft(t, store)
		})
	}
}
