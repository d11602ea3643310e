package tests

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cli"
	"github.com/locktest/locktest/cluster/container"
	"github.com/locktest/locktest/reports"
)

// binary is the locktest executable built for this test run.
var binary string

// testBinaryEnv hands binary to a re-run of the test binary.
const testBinaryEnv = "LOCKTEST_TEST_BINARY"

func TestMain(m *testing.M) {
	// A docker cluster started in this process (docker_test.go) spawns its
	// watchdog from this very binary.
	if len(os.Args) > 1 && os.Args[1] == container.WatchdogCommand {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	if testing.Short() {
		fmt.Println("tests: skipped under -short: every test here builds locktest and starts real servers and processes")
		os.Exit(0)
	}
	if b := os.Getenv(testBinaryEnv); b != "" {
		// A test that re-runs this binary elsewhere (TestRemoteNodes, in
		// a namespace of its own) hands it the locktest it built.
		binary = b
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "locktest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "locktest")
	build := exec.Command("go", "build", "-o", binary, "../cmd/locktest")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build locktest:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one locktest invocation did.
type result struct {
	code   int
	stdout string
	stderr string
	store  string
}

// locktest runs the binary with args in a fresh store and returns its exit
// code and output. The store is under t.TempDir().
func locktest(t *testing.T, args ...string) result {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	return locktestIn(t, store, args...)
}

func locktestIn(t testing.TB, store string, args ...string) result {
	t.Helper()
	return runIn(t, binary, store, args...)
}

// runIn runs bin, a locktest binary (ours, or a user's main that calls
// cli.Main), with args; run commands get --store store.
func runIn(t testing.TB, bin, store string, args ...string) result {
	t.Helper()
	if len(args) > 0 && args[0] == "run" {
		args = append(args, "--store", store)
	}
	limit := 5 * time.Minute
	if len(args) > 0 && args[0] == "explore" {
		limit = 10 * time.Minute // a search runs for its budget, then shrinks
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), store: store}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("locktest %v: %v", args, err)
	}
	t.Logf("locktest %s → exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// results reads the latest run's results.json from the store.
func (r result) results(t testing.TB) reports.Results {
	t.Helper()
	res, err := reports.ReadResults(filepath.Join(r.store, "latest"))
	if err != nil {
		t.Fatalf("read results: %v", err)
	}
	return res
}

// ourProcesses lists live processes whose command line mentions marker or
// whose working directory lies under it. Every process a run starts works
// in the run directory (servers rewrite their command lines, so the working
// directory is the reliable mark).
func ourProcesses(t *testing.T, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // a zombie is already dead
		}
		cl := strings.ReplaceAll(string(cmdline), "\x00", " ")
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.Contains(cl, marker) || strings.HasPrefix(cwd, marker) {
			found = append(found, fmt.Sprintf("%d: %s", pid, cl))
		}
	}
	return found
}

// assertRefused fails unless the command was refused as bad input: exit
// 254 and one line saying want, with no store written and no process left.
func (r result) assertRefused(t *testing.T, want string) {
	t.Helper()
	if r.code != 254 {
		t.Fatalf("exit %d, want 254", r.code)
	}
	out := strings.TrimSpace(r.stdout + r.stderr)
	if strings.Count(out, "\n") != 0 || !strings.Contains(out, want) {
		t.Fatalf("want one line saying %q, got:\n%s", want, out)
	}
	if _, err := os.Stat(r.store); !os.IsNotExist(err) {
		t.Fatal("bad input left a store behind")
	}
	r.assertNothingLeft(t)
}

// assertNothingLeft fails if any process of the store's runs (or the
// locktest binary itself) still runs after a short grace period: the kernel
// delivers parent-death signals asynchronously.
func (r result) assertNothingLeft(t *testing.T) {
	t.Helper()
	assertNothingLeft(t, r.store, binary)
}

func assertNothingLeft(t *testing.T, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, m := range markers {
			left = append(left, ourProcesses(t, m)...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left running:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForFault waits until the history at path records a fault start: the
// moment a client or server is paused, the hardest one to clean up after.
func waitForFault(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), `"fault-start"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no fault started within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runCase is one row of a table of runs: a design under a fault, the exit
// code and verdicts it must give, and any further check of its history.
type runCase struct {
	row, impl, fault string
	args             []string // added to the base flags, overriding them
	code             int
	mutex, data      checker.Verdict // "" = not asserted
	check            func(t *testing.T, h runHistory, res reports.Results)
}

// runScenarios runs each scenario as a subtest named row/impl/fault: the
// counter workload, 5 clients, seed 1, a fault every 2 s, for duration.
//
// The scenarios run two at a time (go test's -parallel, one per core):
// each has a store of its own, by which its processes are found, and
// waits on its faults far more than it computes.
func runScenarios(t *testing.T, cases []runCase, duration string) {
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.row, tc.impl, tc.fault), func(t *testing.T) {
			t.Parallel()
			args := []string{"run", "--impl", tc.impl, "--workload", "counter", "--fault", tc.fault,
				"--clients", "5", "--duration", duration, "--seed", "1", "--fault-interval", "2s"}
			r := locktest(t, append(args, tc.args...)...)
			assertNothingLeft(t, r.store)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d", r.code, tc.code)
			}
			res := r.results(t)
			if tc.mutex != "" && res.Checks.Mutex.Verdict != tc.mutex {
				t.Errorf("mutex check %s, want %s", res.Checks.Mutex.Verdict, tc.mutex)
			}
			if tc.data != "" && res.Checks.Resource.Verdict != tc.data {
				t.Errorf("resource check %s, want %s", res.Checks.Resource.Verdict, tc.data)
			}
			if tc.data == checker.Invalid && res.Checks.Stats.Lost == 0 {
				t.Errorf("resource invalid but no update lost: %+v", res.Checks.Stats)
			}
			if tc.fault != "none" && len(res.Checks.Faults) == 0 {
				t.Errorf("no %s fault happened", tc.fault)
			}
			if tc.check != nil {
				tc.check(t, readRunHistory(t, r), res)
			}
		})
	}
}
