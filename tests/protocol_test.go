package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// protocolDir holds the Python protocol clients, as absolute paths: the
// lock program runs in the directory locktest was started from.
var protocolDir = func() string {
	d, err := filepath.Abs("protocol")
	if err != nil {
		panic(err)
	}
	return d
}()

var builds sync.Map // package → *buildResult

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// build compiles a main package of this module once per test binary.
func build(t *testing.T, pkg string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(pkg, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		b.path = filepath.Join(filepath.Dir(binary), filepath.Base(pkg))
		out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// TestProtocolClientsReproduceRows1And2: the single-Redis lock spoken
// through the process protocol, by a Python and a Go program, must give the
// verdicts TestPauseHolder asserts for redis-single and redis-single-fenced
// (docs/anomalies.md rows 1 and 2): the unfenced lock loses updates; the fenced one
// keeps the data safe while two clients still believed they held the lock.
func TestProtocolClientsReproduceRows1And2(t *testing.T) {
	goClient := build(t, "../examples/redislock-exec")
	py := "python3 " + filepath.Join(protocolDir, "redislock.py")
	cases := []struct {
		name, cmd   string
		code        int
		mutex, data checker.Verdict
	}{
		{"python", py, 1, checker.Invalid, checker.Invalid},
		{"python-fenced", py + " --fenced", 0, checker.Invalid, checker.Valid},
		{"go", goClient, 1, checker.Invalid, checker.Invalid},
		{"go-fenced", goClient + " -fenced", 0, checker.Invalid, checker.Valid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := locktest(t, "run", "--impl", "exec", "--exec-cmd", tc.cmd, "--exec-servers", "redis-single",
				"--workload", "counter", "--fault", "pause-holder", "--clients", "5", "--duration", "8s", "--seed", "1",
				"--fault-interval", "2s")
			assertNothingLeft(t, r.store, protocolDir, goClient)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			res := r.results(t)
			if res.Checks.Mutex.Verdict != tc.mutex || res.Checks.Resource.Verdict != tc.data {
				t.Fatalf("mutex %s resource %s, want %s %s", res.Checks.Mutex.Verdict, res.Checks.Resource.Verdict, tc.mutex, tc.data)
			}
			for _, n := range res.Notes {
				if strings.HasPrefix(n, "worker stopped") {
					t.Fatalf("a reference client broke: %v", res.Notes)
				}
			}
			if tc.data == checker.Invalid && res.Checks.Stats.Lost == 0 {
				t.Fatal("unfenced run lost no update")
			}
			if tc.data == checker.Valid && res.Checks.Stats.Rejected == 0 {
				t.Fatal("fenced run rejected no stale write: tokens did not reach the resource")
			}
			if res.Metrics.CommandsPerAcquisition <= 0 {
				t.Fatal("no store commands reported through the protocol")
			}
			// The command is quoted only where the shell needs it.
			if !strings.Contains(res.Command, "--exec-cmd ") || !strings.Contains(res.Command, tc.cmd) ||
				!strings.Contains(res.Command, "--exec-servers redis-single") {
				t.Fatalf("reproduce command lacks the exec flags: %s", res.Command)
			}
		})
	}
}

// TestProtocolMisbehavingClients: a lock program that writes garbage,
// crashes, hangs or answers a request it was not asked gets one clear line
// naming the worker and the offending line; the op in flight is recorded as
// unknown, never ok; the worker stops, the run ends with verdict unknown
// and leaves nothing running.
func TestProtocolMisbehavingClients(t *testing.T) {
	cases := []struct {
		mode string
		at   string // the request it misbehaves at (after init)
		want string // in the error line
	}{
		{"garbage", "3", `stdout line 4: not a JSON object: this is not json`},
		{"crash", "3", "closed its stdout before replying: it exited: exit status 3"},
		{"crash", "0", `exit status 3 (request: {"id":0,"type":"init"`},
		{"hang", "3", "no reply within timeout_ms + 2s: considered hung"},
		// Faults wait for every client's init: one that never answers
		// still breaks after its bound, and the run goes on.
		{"hang", "0", `no reply within timeout_ms + 2s: considered hung (request: {"id":0,"type":"init"`},
		{"unsolicited", "3", "stdout line 4: answers request 1003, which it was not asked (waiting for 3)"},
	}
	for _, tc := range cases {
		t.Run(tc.mode+"@"+tc.at, func(t *testing.T) {
			cmd := fmt.Sprintf("python3 %s %s %s", filepath.Join(protocolDir, "misbehave.py"), tc.mode, tc.at)
			r := locktest(t, "run", "--impl", "exec", "--exec-cmd", cmd, "--exec-servers", "redis-single",
				"--clients", "2", "--duration", "5s", "--acquire-timeout", "1s")
			assertNothingLeft(t, r.store, protocolDir)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2 (unknown)", r.code)
			}
			for c := range 2 {
				line := ""
				for _, l := range strings.Split(r.stderr, "\n") {
					if strings.HasPrefix(l, fmt.Sprintf("locktest: c%d: lock program '%s': ", c, cmd)) {
						line = l
					}
				}
				if !strings.Contains(line, tc.want) || !strings.Contains(line, "(request: {") {
					t.Fatalf("no error line for c%d saying %q with the request:\n%s", c, tc.want, r.stderr)
				}
			}
			res := r.results(t)
			if res.Verdict != checker.Unknown {
				t.Fatalf("verdict %s, want unknown", res.Verdict)
			}
			recs, err := history.ReadFile(filepath.Join(r.store, "latest", "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			failedAt := map[int]int{}
			for i, rec := range recs {
				if rec.Type == history.ClientFailed {
					failedAt[rec.Process] = i
				}
			}
			if len(failedAt) != 2 {
				t.Fatalf("client-failed records for %d workers, want 2", len(failedAt))
			}
			broken := 0
			for i, rec := range recs {
				if p, ok := failedAt[rec.Process]; ok && i > p {
					t.Fatalf("c%d recorded %s %s after it broke", rec.Process, rec.Type, rec.F)
				}
				if strings.Contains(rec.Error, "lock program") && rec.Type != history.ClientFailed {
					broken++
					if rec.Type != history.Info {
						t.Fatalf("op cut short by the broken program recorded as %s, want info: %+v", rec.Type, rec)
					}
				}
			}
			if tc.at != "0" && broken < 2 {
				t.Fatalf("%d ops recorded as cut short by the program, want one per worker", broken)
			}
		})
	}
}

// TestFaultsWaitForInit: clients that take seconds to answer init, under a
// fault that strikes every few hundred milliseconds. No strike may come
// before the last client answered init: one that did would test the
// client's start-up, not its lock.
func TestFaultsWaitForInit(t *testing.T) {
	const clients = 3
	cmd := "python3 " + filepath.Join(protocolDir, "slowinit.py") + " 1.5" // the last answers after 3s
	r := locktest(t, "run", "--impl", "exec", "--exec-cmd", cmd, "--exec-servers", "redis-single",
		"--clients", fmt.Sprint(clients), "--fault", "pause-node", "--fault-interval", "300ms", "--fault-duration", "100ms",
		"--duration", "3s", "--seed", "1")
	assertNothingLeft(t, r.store, protocolDir)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0", r.code)
	}
	var ready int64 // when the last client answered init
	for c := range clients {
		log, err := os.ReadFile(filepath.Join(r.store, "latest", reports.WorkerLogDir, fmt.Sprintf("c%d.log", c)))
		if err != nil {
			t.Fatal(err)
		}
		var at int64
		for _, l := range strings.Split(string(log), "\n") {
			if _, s, ok := strings.Cut(l, "answered init at monotonic "); ok {
				if _, err := fmt.Sscan(s, &at); err != nil {
					t.Fatalf("c%d log: %q: %v", c, l, err)
				}
			}
		}
		if at == 0 {
			t.Fatalf("c%d never logged its init answer:\n%s", c, log)
		}
		ready = max(ready, at)
	}
	recs, err := history.ReadFile(filepath.Join(r.store, "latest", reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	strikes := 0
	for _, rec := range recs {
		if rec.Type != history.FaultStart {
			continue
		}
		strikes++
		if rec.Time < ready {
			t.Fatalf("%s struck %v before the last client answered init", rec.Fault, time.Duration(ready-rec.Time))
		}
	}
	if strikes == 0 {
		t.Fatal("no fault struck")
	}
}

// TestExecServerClockFaults: clock faults move the servers' clocks, so
// they run under a protocol client in any language (python3 reads its
// clock however it likes) as long as the servers take the clock shim.
func TestExecServerClockFaults(t *testing.T) {
	py := "python3 " + filepath.Join(protocolDir, "redislock.py")
	for _, fault := range []string{"clock-bump", "clock-strobe"} {
		t.Run(fault, func(t *testing.T) {
			r := locktest(t, "run", "--impl", "exec", "--exec-cmd", py, "--exec-servers", "redis-single",
				"--fault", fault, "--fault-interval", "1s", "--duration", "5s", "--seed", "1")
			assertNothingLeft(t, r.store, protocolDir)
			if r.code != 0 && r.code != 1 {
				t.Fatalf("exit %d, want a checked run (0 or 1)", r.code)
			}
			recs, err := history.ReadFile(filepath.Join(r.store, "latest", reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			fs := history.Faults(recs)
			if len(fs) == 0 || fs[0].Name != fault {
				t.Fatalf("faults %+v, want %s strikes", fs, fault)
			}
			assertHealed(t, fs)
		})
	}
}

// TestProtocolPausedWhileWaiting stops a worker, and its lock program with
// it, while the program works on an acquire, for longer than the request's
// timeout plus margin. The program is not hung: it was stopped with the
// worker, and the wait must not count that time against it.
func TestProtocolPausedWhileWaiting(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	cmd := exec.Command(binary, "run", "--impl", "exec", "--exec-servers", "redis-single", "--exec-cmd",
		"python3 "+filepath.Join(protocolDir, "redislock.py"), "--workload", "mutex", "--clients", "2",
		"--ttl", "10s", "--hold-min", "5s", "--hold-max", "5s", "--acquire-timeout", "1s",
		"--duration", "12s", "--store", store)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// Wait until one client holds the lock (for 5 s) and the other has just
	// asked for it: that acquire can only end at its 1 s deadline.
	histPath := filepath.Join(store, "latest", "history.jsonl")
	var waiter history.Record
	deadline := time.Now().Add(30 * time.Second)
	for waiter.Seq == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no client waited for the lock")
		}
		time.Sleep(10 * time.Millisecond)
		recs, _ := history.ReadFile(histPath)
		last := map[int]history.Record{}
		for _, r := range recs {
			last[r.Process] = r
		}
		now := clock.Mono()
		for _, w := range [][2]int{{0, 1}, {1, 0}} {
			holder, wait := last[w[0]], last[w[1]]
			if holder.F == history.FAcquire && holder.Type == history.OK && now-holder.Time < int64(3*time.Second) &&
				wait.F == history.FAcquire && wait.Type == history.Invoke && now-wait.Time < int64(200*time.Millisecond) {
				waiter = wait
			}
		}
	}
	worker := workerPid(t, store, waiter.Process)
	if err := syscall.Kill(-worker, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if stopped := groupStates(t, worker); len(stopped) < 2 || strings.Trim(strings.Join(stopped, ""), "T") != "" {
		t.Fatalf("states of the worker's process group %v: want the worker and its lock program, all stopped (T)", stopped)
	}
	time.Sleep(4 * time.Second) // > 1 s timeout + 2 s margin
	resumed := clock.Mono()
	if err := syscall.Kill(-worker, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	t.Logf("stderr:\n%s", stderr.String())
	assertNothingLeft(t, store, protocolDir)
	if err != nil {
		t.Fatalf("run: %v, want exit 0", err)
	}
	recs, err := history.ReadFile(histPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Process == waiter.Process && r.Seq == waiter.Seq && r.Type != history.Invoke {
			if r.Type == history.Info || r.Time < resumed {
				t.Fatalf("the acquire spanning the pause ended %s %v after the resume, want ok or fail after it",
					r.Type, time.Duration(r.Time-resumed))
			}
			return
		}
	}
	t.Fatal("the acquire spanning the pause never completed")
}

// groupStates returns the state letter of every process in group pgid.
func groupStates(t *testing.T, pgid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces, so split after ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 2 && f[2] == fmt.Sprint(pgid) {
			states = append(states, f[0])
		}
	}
	return states
}

// workerPid finds the worker process of client c: `locktest worker cN`. Its pid is its process group, which the lock program
// shares.
func workerPid(t *testing.T, store string, c int) int {
	t.Helper()
	for _, p := range ourProcesses(t, store) {
		var pid int
		fmt.Sscanf(p, "%d:", &pid)
		if strings.HasSuffix(strings.TrimSpace(p), fmt.Sprintf(" worker c%d", c)) {
			return pid
		}
	}
	t.Fatalf("no worker process for c%d", c)
	return 0
}

// TestGoAPIExample builds examples/mylock, a user's own main that registers
// a design and calls cli.Main, and runs it: its workers must be the user's
// binary (else the design is unknown there), the lock's flaw must be found,
// and its renewals must be exercised.
func TestGoAPIExample(t *testing.T) {
	bin := build(t, "../examples/mylock")
	cases := []struct {
		workload string
		code     int
	}{
		// No fencing: a holder paused past its lease loses an update.
		{"counter", 1},
		// Renewing after the pause finds the lease lost and skips the write.
		{"counter-renew", 0},
	}
	for _, tc := range cases {
		t.Run(tc.workload, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			r := runIn(t, bin, store, "run", "--impl", "example-redis", "--workload", tc.workload,
				"--fault", "pause-holder", "--clients", "4", "--duration", "7s", "--fault-interval", "2s")
			assertNothingLeft(t, store, bin)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			res := r.results(t)
			if res.Checks.Mutex.Verdict != checker.Invalid {
				t.Fatalf("mutex %s: the paused holder was not seen overlapping", res.Checks.Mutex.Verdict)
			}
			// The stock locktest lacks the design: the run reproduces
			// with the user's binary, and the stock analyze re-checks it
			// from the history all the same.
			if !strings.HasPrefix(res.Command, "mylock run --impl example-redis ") {
				t.Errorf("reproduce command %q: want the user's binary, mylock run --impl example-redis …", res.Command)
			}
			if a := locktestIn(t, store, "analyze", "--no-report", filepath.Join(store, "latest")); a.code != tc.code {
				t.Errorf("stock locktest analyze of the run: exit %d, want %d\n%s%s", a.code, tc.code, a.stdout, a.stderr)
			}
			if tc.workload != "counter-renew" {
				return
			}
			recs, err := history.ReadFile(filepath.Join(store, "latest", "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			renews := map[history.Type]int{}
			for _, rec := range recs {
				if rec.F == history.FRenew && rec.Type != history.Invoke {
					renews[rec.Type]++
				}
			}
			if renews[history.OK] == 0 || renews[history.Fail] == 0 {
				t.Fatalf("renewals %v: want some granted and some refused after a pause", renews)
			}
		})
	}
}

// TestExecBadInput: mistakes in the exec flags give one line and exit 254.
func TestExecBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--impl", "exec", "--exec-servers", "redis-single"}, "--exec-cmd is empty"},
		{[]string{"--impl", "exec", "--exec-cmd", "python3 'x", "--exec-servers", "redis-single"}, "unbalanced ' quote"},
		{[]string{"--impl", "exec", "--exec-cmd", "python3 x.py"}, "needs --exec-servers"},
		{[]string{"--impl", "exec", "--exec-cmd", "python3 x.py", "--exec-servers", "nope"}, `unknown impl "nope"`},
		{[]string{"--impl", "exec", "--exec-cmd", "python3 x.py", "--exec-servers", "exec"}, "name a design that starts servers"},
		{[]string{"--impl", "exec", "--exec-cmd", "./no-such-program", "--exec-servers", "none"}, "--exec-cmd: ./no-such-program not found"},
		{[]string{"--impl", "redis-single", "--exec-cmd", "python3 x.py"}, "only apply to --impl exec"},
		{[]string{"--impl", "redis-single", "--workload", "counter-renew"}, "cannot (its Lock is no lock.Renewer)"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			locktest(t, append([]string{"run"}, tc.args...)...).assertRefused(t, tc.want)
		})
	}
}

// TestExecInterruptedLeavesNothing interrupts (SIGINT) and kills (SIGKILL)
// the coordinator while a worker and its lock program are paused: the
// programs, children of the workers, must go too.
func TestExecInterruptedLeavesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			cmd := exec.Command(binary, "run", "--impl", "exec", "--exec-servers", "redis-single", "--exec-cmd",
				"python3 "+filepath.Join(protocolDir, "redislock.py"), "--fault", "pause-holder",
				"--fault-interval", "500ms", "--fault-duration", "20s", "--duration", "60s", "--store", store)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			histPath := filepath.Join(store, "latest", "history.jsonl")
			waitForFault(t, histPath)
			if len(ourProcesses(t, protocolDir)) == 0 {
				t.Fatal("found no lock program running: the leftover check would prove nothing")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			assertNothingLeft(t, store, protocolDir)
		})
	}
}

// TestProtocolCheckpoint: a program announces a checkpoint between two of
// its round trips (zoo.py token-after: SET NX PX, then INCR for the token),
// and pause-at stops the client exactly there. Every strike lands inside an
// acquire that returns ok after the pause; another client, granted during
// it, got the key only once the paused client's SET had expired and got a
// token lower than the paused client's: the SET came before the pause, the
// INCR after it. A checkpoint the run was not told of breaks the program
// with one line saying how to fix it.
func TestProtocolCheckpoint(t *testing.T) {
	zoo := "python3 " + filepath.Join(protocolDir, "zoo.py") + " token-after"
	const ttl = time.Second
	t.Run("pause-at", func(t *testing.T) {
		r := locktest(t, "run", "--impl", "exec", "--exec-cmd", zoo, "--exec-servers", "redis-single",
			"--exec-checkpoints", "after-set", "--fault", "pause-at", "--workload", "counter", "--clients", "3",
			"--duration", "7s", "--ttl", ttl.String(), "--fault-duration", "1.5s", "--fault-interval", "1.5s", "--seed", "1")
		assertNothingLeft(t, r.store, protocolDir)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("exit %d, want a verdict", r.code)
		}
		res := r.results(t)
		for _, n := range res.Notes {
			if strings.HasPrefix(n, "worker stopped") {
				t.Fatalf("the program broke: %v", res.Notes)
			}
		}
		if !strings.Contains(res.Command, "--exec-checkpoints after-set") {
			t.Errorf("reproduce command lacks --exec-checkpoints: %s", res.Command)
		}
		recs, err := history.ReadFile(filepath.Join(r.store, "latest", reports.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		ops := history.Ops(recs)
		strikes, between := 0, 0
		for _, f := range history.Faults(recs) {
			c, rest, ok := history.ClientIn(f.Target)
			if f.Name != "pause-at" || !ok || rest != "" {
				t.Fatalf("fault %+v: want pause-at on a client", f)
			}
			strikes++
			var paused *history.Op
			for i, o := range ops {
				if o.Process == c && o.F == history.FAcquire && o.Call < f.Start && o.Return > f.Stop && o.Outcome == history.OK {
					paused = &ops[i]
				}
			}
			if paused == nil {
				t.Fatalf("%s was stopped at %v–%v by pause-at outside any acquire that returned ok after it", f.Target,
					time.Duration(f.Start), time.Duration(f.Stop))
			}
			for _, o := range ops {
				if o.Process != c && o.F == history.FAcquire && o.Outcome == history.OK && o.Key == paused.Key &&
					o.Return > f.Start && o.Return < f.Stop {
					if o.Return < paused.Call+int64(ttl)-int64(5*time.Millisecond) {
						t.Errorf("c%d was granted %s at %v, before %s's SET (acquire called at %v) could have expired: the pause came before the SET",
							o.Process, o.Key, time.Duration(o.Return), f.Target, time.Duration(paused.Call))
					}
					if o.Token < paused.Token {
						between++
					}
				}
			}
		}
		if strikes == 0 || between == 0 {
			t.Fatalf("%d strike(s), %d grant(s) during one with a token below the paused client's: no pause between SET and INCR shown", strikes, between)
		}
		t.Logf("%d strike(s); %d grant(s) made during a pause got a token older than the paused client's", strikes, between)
	})
	t.Run("unlisted", func(t *testing.T) {
		r := locktest(t, "run", "--impl", "exec", "--exec-cmd", zoo, "--exec-servers", "redis-single",
			"--clients", "1", "--duration", "3s")
		assertNothingLeft(t, r.store, protocolDir)
		want := `announced checkpoint "after-set", which --exec-checkpoints does not list (it lists none): add it`
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Fatalf("exit %d, want 2 and a line saying %q", r.code, want)
		}
	})
}
