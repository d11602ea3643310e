package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

// TestSlowResourceWrite reproduces docs/anomalies.md row 3, Kleppmann's delayed
// packet: the holder's write to the resource is held in the network past
// the TTL while the holder waits for it (--io-timeout longer than the
// delay); another client takes the lock and writes; the late write lands.
// Unfenced, an update is lost; fenced, the resource rejects the late write.
func TestSlowResourceWrite(t *testing.T) {
	cases := []struct {
		impl string
		code int
		data checker.Verdict
	}{
		{"redis-single", 1, checker.Invalid},
		{"redis-single-fenced", 0, checker.Valid},
	}
	for _, tc := range cases {
		t.Run(tc.impl, func(t *testing.T) {
			r := locktest(t, "run", "--impl", tc.impl, "--workload", "counter", "--fault", "slow-resource-write",
				"--clients", "5", "--duration", "10s", "--seed", "1", "--fault-interval", "2s", "--io-timeout", "3s")
			r.assertNothingLeft(t)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			res := r.results(t)
			if res.Checks.Resource.Verdict != tc.data {
				t.Fatalf("resource check %s, want %s", res.Checks.Resource.Verdict, tc.data)
			}
			if len(res.Checks.Faults) == 0 || !strings.HasSuffix(res.Checks.Faults[0].Target, ":resource") {
				t.Fatalf("no slow-resource-write on a resource link: %+v", res.Checks.Faults)
			}
			switch tc.data {
			case checker.Invalid:
				if res.Checks.Stats.Lost == 0 || !strings.Contains(strings.Join(res.Checks.Resource.Violations[0].Faults, ","), "slow-resource-write") {
					t.Fatalf("no lost update blamed on the delayed write: %+v %+v", res.Checks.Stats, res.Checks.Resource.Violations)
				}
			case checker.Valid:
				if res.Checks.Stats.Rejected == 0 {
					t.Fatalf("fenced resource rejected no late write: %+v", res.Checks.Stats)
				}
			}
		})
	}
}

// TestKillHolder kills the holder inside its critical section: the lease
// design recovers after about one TTL, the dead client's lock is not a
// violation, and the client comes back as a new process.
func TestKillHolder(t *testing.T) {
	r := locktest(t, "run", "--impl", "redis-single", "--workload", "counter", "--fault", "kill-holder",
		"--clients", "4", "--duration", "8s", "--seed", "2", "--fault-interval", "2s", "--ttl", "1s")
	r.assertNothingLeft(t)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0: a crashed holder is no violation", r.code)
	}
	res := r.results(t)
	if res.Checks.Mutex.Verdict != checker.Valid {
		t.Fatalf("mutex check %s: the dead holder's lease expiring counts as an overlap", res.Checks.Mutex.Verdict)
	}
	var measured int
	for _, rec := range res.Metrics.Recoveries {
		if rec.NextAcquireMs == nil {
			continue // the run ended first
		}
		measured++
		// TTL 1s: the lock frees when the lease runs out, a few retries later.
		if ms := *rec.NextAcquireMs; ms < 700 || ms > 1600 {
			t.Errorf("next acquire %.0f ms after killing %s, want ≈ the 1s TTL", ms, rec.Target)
		}
		t.Logf("kill-holder on %s: next acquire after %.0f ms", rec.Target, *rec.NextAcquireMs)
	}
	if measured == 0 {
		t.Fatalf("no recovery measured: %+v", res.Metrics.Recoveries)
	}
	if !strings.Contains(r.stdout, "recovery") {
		t.Errorf("summary does not show the recovery time")
	}
	// The killed client came back as a new process: it tried to acquire
	// again after its restart, with op numbers past its old ones. (Not that
	// it won: SET NX is unfair, a releasing client often re-acquires at
	// once, so a waiter may lose every race for seconds.)
	recs, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f := res.Checks.Faults[0]
	var before, after int
	for _, op := range history.Ops(recs) {
		if fmt.Sprintf("c%d", op.Process) != f.Target || op.F != history.FAcquire {
			continue
		}
		if op.Call < f.Start {
			before = max(before, op.Seq)
		} else if op.Call > f.Stop {
			if op.Seq <= before {
				t.Fatalf("%s reused op number %d after its restart", f.Target, op.Seq)
			}
			after++
		}
	}
	if after == 0 {
		t.Fatalf("%s never tried to acquire again after its restart", f.Target)
	}
}

// counter is the workload TestEveryFaultRuns runs, as faults see it.
var counter = faults.Workload{Name: "counter", Resource: true}

// TestEveryFaultRuns runs each fault end to end on the fenced design (whose
// data must stay safe) and checks that every start was healed and nothing
// is left running.
func TestEveryFaultRuns(t *testing.T) {
	for _, f := range faults.All() {
		if f.Name() == "none" {
			continue
		}
		t.Run(f.Name(), func(t *testing.T) {
			t.Parallel() // two at a time: each run is found by its own store
			// A fault that needs another kind of deployment (failover, the
			// Redlock scenarios) runs on the first design it applies to,
			// which may rightly lose updates under it: then only the run
			// itself is checked, not its verdict.
			impl, want := "redis-single-fenced", []int{0}
			if d, _ := impls.Lookup(impl); f.Applies(d, counter) != nil {
				impl, want = "", []int{0, 1}
				for _, d := range impls.All() {
					if f.Applies(d, counter) == nil {
						impl = d.Name
						break
					}
				}
			}
			args := []string{"run", "--impl", impl, "--workload", "counter", "--fault", f.Name(),
				"--clients", "3", "--duration", "5s", "--seed", "3", "--fault-interval", "1s", "--fault-duration", "1s"}
			if f.Traits().Net == faults.NetKernel {
				args = append(args, "--network", "netns") // only the kernel makes it
			}
			r := locktest(t, args...)
			assertNothingLeft(t, r.store)
			if !slices.Contains(want, r.code) {
				t.Fatalf("exit %d, want %v", r.code, want)
			}
			assertHealed(t, r.results(t).Checks.Faults)
		})
	}
}

// TestFinalHeal ends runs while faults of every kind are in effect: the
// final heal must undo all of them (or the run exits 255), the workers
// finish against a healed system and the final read succeeds. Server-side
// and client-side faults run apart: a paused server has no holder to kill.
func TestFinalHeal(t *testing.T) {
	cases := []struct{ faults, target string }{
		{"pause-node,latency,clock-bump", ""},
		{"kill-holder,client-clock-skew,pause-client,partition", "pause-client=c1,partition=link:c0:redis-0"},
	}
	for _, tc := range cases {
		t.Run(tc.faults, func(t *testing.T) {
			args := []string{"run", "--impl", "redis-single-fenced", "--workload", "counter", "--fault", tc.faults,
				"--clients", "4", "--duration", "4s", "--seed", "4", "--fault-interval", "1s", "--fault-duration", "60s"}
			if tc.target != "" {
				args = append(args, "--fault-target", tc.target)
			}
			r := locktest(t, args...)
			r.assertNothingLeft(t)
			if r.code != 0 {
				t.Fatalf("exit %d, want 0", r.code)
			}
			res := r.results(t)
			if n := len(strings.Split(tc.faults, ",")); len(res.Checks.Faults) != n {
				t.Fatalf("%d fault events, want each of the %d faults once, in effect at the end: %+v", len(res.Checks.Faults), n, res.Checks.Faults)
			}
			assertHealed(t, res.Checks.Faults)
			if res.Checks.Stats.Final == nil {
				t.Fatal("no final read after the heal")
			}
		})
	}
}

func assertHealed(t *testing.T, fs []history.Fault) {
	t.Helper()
	if len(fs) == 0 {
		t.Fatal("no fault took place")
	}
	for _, f := range fs {
		if !f.Healed {
			t.Errorf("%s on %s was never healed", f.Name, f.Target)
		}
	}
}

// TestFaultBadInput: a fault or target that cannot work is refused with
// one line and exit 254, before a run directory is kept.
func TestFaultBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown fault", []string{"--fault", "pause-holder,gremlins"}, `unknown fault "gremlins"`},
		{"no primary", []string{"--fault", "pause-node", "--fault-target", "primary"}, "has no primary"},
		{"no minority", []string{"--fault", "partition", "--fault-target", "minority/clients"}, "too few for a minority"},
		{"no resource", []string{"--fault", "slow-resource-write", "--workload", "mutex"}, "no resource"},
		{"no such client", []string{"--fault", "pause-client", "--fault-target", "c9"}, "only 2 clients"},
		{"wrong kind", []string{"--fault", "pause-node,latency", "--fault-target", "pause-node=holder"}, "cannot target"},
		{"targetless", []string{"--fault", "none", "--fault-target", "node"}, "takes no target"},
		{"no such link", []string{"--fault", "partition", "--fault-target", "link:c0:nowhere"}, "no such link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--impl", "redis-single", "--clients", "2", "--duration", "2s"}, tc.args...)
			r := locktest(t, args...)
			r.assertNothingLeft(t)
			if r.code != 254 {
				t.Fatalf("exit %d, want 254", r.code)
			}
			if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr %q, want one line saying %q", r.stderr, tc.want)
			}
			if runs, _ := filepath.Glob(filepath.Join(r.store, "*", "*", "history.jsonl")); len(runs) > 0 {
				t.Fatalf("bad input left a run behind: %v", runs)
			}
		})
	}
}

// TestWorkerClock drives a real worker process through the protocol: a
// clock line skews the clock its lock reads, and the worker confirms the
// skew it now sees; a second line puts it back.
func TestWorkerClock(t *testing.T) {
	c := cluster.New(t.TempDir())
	defer c.Stop()
	node, err := c.StartRedis(context.Background(), "redis-0", cluster.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"client": 0, "impl": "redis-single", "workload": "mutex", "keys": []string{"lock-0"},
		"hold_min": "10ms", "hold_max": "20ms", "seed": 1,
		"lock": map[string]any{"client": 0, "nodes": []string{node.Addr()}, "TTL": int64(time.Second),
			"AcquireTimeout": int64(time.Second), "IOTimeout": int64(500 * time.Millisecond),
			"RetryMin": int64(10 * time.Millisecond), "RetryJitter": int64(10 * time.Millisecond)}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "worker")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	line, _ := json.Marshal(cfg)
	fmt.Fprintf(in, "%s\n", line)
	sc := bufio.NewScanner(out)
	ack := func(offset time.Duration, rate float64) time.Duration {
		t.Helper()
		fmt.Fprintf(in, "clock %d %g\n", int64(offset), rate)
		for sc.Scan() {
			var m struct {
				Clock *struct {
					Offset time.Duration `json:"offset"`
					Rate   float64       `json:"rate"`
					Skew   time.Duration `json:"skew"`
				} `json:"clock"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Clock != nil {
				if m.Clock.Offset != offset || m.Clock.Rate != rate {
					t.Fatalf("worker confirmed %+v, want offset %v rate %g", *m.Clock, offset, rate)
				}
				return m.Clock.Skew
			}
		}
		t.Fatalf("worker never confirmed the clock: %v", sc.Err())
		return 0
	}
	if skew := ack(5*time.Second, 2); skew < 5*time.Second-50*time.Millisecond || skew > 5*time.Second+50*time.Millisecond {
		t.Fatalf("worker's lock clock is off by %v, want 5s", skew)
	}
	if skew := ack(0, 1); skew < -50*time.Millisecond || skew > 50*time.Millisecond {
		t.Fatalf("worker's lock clock still off by %v after the reset", skew)
	}
	fmt.Fprintln(in, "stop")
}

// TestClockFaultNeedsCC: clock faults build the shim with cc; without one
// the run is refused with one line naming the package, before anything
// starts.
func TestClockFaultNeedsCC(t *testing.T) {
	bin := t.TempDir()
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(redis, filepath.Join(bin, "redis-server")); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	cmd := exec.Command(binary, "run", "--impl", "redis-single", "--fault", "clock-bump", "--duration", "2s", "--store", store)
	cmd.Env = append(os.Environ(), "PATH="+bin)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 254 {
		t.Fatalf("exit %v, want 254: %s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "cc not found in PATH: install it (Debian: apt-get install gcc)") {
		t.Fatalf("output %q, want one line about cc", out)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("a store was created: %v", err)
	}
}

// TestPairStrikesTogether runs a pair (--fault a+b): every strike starts
// both faults within moments of each other, on the same holder, each
// held for its own length (--fault-duration, --fault-duration2) and
// recorded with its own aim, so efficacy judges each; the reproduce line
// and config.json keep the pair, and analyze re-checks the stored run.
// About 8 s: two 3 s runs' worth of start-up and strikes.
func TestPairStrikesTogether(t *testing.T) {
	r := locktest(t, "run", "--impl", "redis-single", "--workload", "counter", "--fault", "reply-latency+pause-holder",
		"--fault-target", "reply-latency=holder", "--fault-moment", "grant", "--clients", "3", "--duration", "4s", "--seed", "3",
		"--fault-interval", "700ms", "--fault-duration", "250ms", "--fault-duration2", "600ms", "--latency", "250ms", "--jitter", "0s")
	r.assertNothingLeft(t)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("exit %d, want a verdict (0 or 1)", r.code)
	}
	res := r.results(t)
	var lat, pause []history.Fault
	for _, f := range res.Checks.Faults {
		switch f.Name {
		case "reply-latency":
			lat = append(lat, f)
		case "pause-holder":
			pause = append(pause, f)
		}
	}
	if len(lat) == 0 || len(lat) != len(pause) {
		t.Fatalf("%d reply-latency and %d pause-holder strikes, want as many of each, at least one: %+v", len(lat), len(pause), res.Checks.Faults)
	}
	// The final heal ends a strike under way when the run ends: such a
	// strike is cut short, not too short.
	var finalHeal int64
	for _, f := range res.Checks.Faults {
		finalHeal = max(finalHeal, f.Stop)
	}
	for i := range lat {
		l, p := lat[i], pause[i]
		if d := time.Duration(p.Start - l.Start).Abs(); d > 100*time.Millisecond {
			t.Errorf("strike %d: the faults began %v apart, want together", i, d)
		}
		if l.Target != p.Target || l.Moment != "grant" || p.Moment != "grant" {
			t.Errorf("strike %d: reply-latency on %s at %s, pause-holder on %s at %s: want the same holder at its grant", i, l.Target, l.Moment, p.Target, p.Moment)
		}
		if l.Aim != history.AimLinks || p.Aim != history.AimHolder {
			t.Errorf("strike %d: aims %s and %s, want each fault's own", i, l.Aim, p.Aim)
		}
		if !l.Healed || !p.Healed || time.Duration(finalHeal-p.Stop) < 50*time.Millisecond {
			continue // in effect at the run's end
		}
		if dl, dp := time.Duration(l.Stop-l.Start), time.Duration(p.Stop-p.Start); dl > 450*time.Millisecond || dp < 550*time.Millisecond {
			t.Errorf("strike %d: reply-latency lasted %v (asked 250ms), pause-holder %v (asked 600ms)", i, dl, dp)
		}
	}
	if len(res.Checks.Efficacy) != len(res.Checks.Faults) {
		t.Errorf("%d efficacy entries for %d strikes", len(res.Checks.Efficacy), len(res.Checks.Faults))
	}
	if !strings.Contains(res.Command, "--fault reply-latency+pause-holder") || !strings.Contains(res.Command, "--fault-duration2 600ms") {
		t.Errorf("reproduce line lacks the pair or its second length: %s", res.Command)
	}
	if !slices.Equal(res.Faults, []string{"reply-latency+pause-holder"}) {
		t.Errorf("results faults %v, want the pair as one item", res.Faults)
	}
	if a := locktestIn(t, r.store, "analyze", "--no-report", filepath.Join(r.store, "latest")); a.code != r.code {
		t.Errorf("analyze of the stored pair run: exit %d, want %d\n%s", a.code, r.code, a.stderr)
	}
}
