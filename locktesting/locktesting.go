// Package locktesting runs a locktest scenario against your own lock from
// go test: the design's real servers, one worker process per client, the
// faults, and the check of the history, with the test failing when the
// verdict is not the one it expects.
//
//	var design = impls.Design{Name: "mylock", Deploy: …, New: …}
//
//	func TestMain(m *testing.M) { locktesting.Main(m, design) }
//
//	func TestMyLockPausedHolder(t *testing.T) {
//		locktesting.Run(t, design, locktesting.Fault("pause-holder"), locktesting.Duration(8*time.Second))
//	}
//
// The worker processes are the reason for Main. locktest spawns its clients
// from os.Executable(), so that a fault can SIGSTOP one like a GC pause;
// under go test that executable is the test binary, which would otherwise
// run the tests again instead of serving as a worker. Main, called from
// TestMain, recognizes the worker command locktest spawns it with, runs the
// worker role with the designs it registered and exits; in the test
// process it runs the tests. It is Go's TestMain hook for a binary that
// re-executes itself (testscript.Main works the same way).
package locktesting

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cli"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// mainRan is set by Main in the test process: without it the workers
// would run the tests instead of a client, and Run refuses to start.
var mainRan bool

// Main registers designs (each also for the worker processes, which find
// them by name), then either serves as a worker, when locktest spawned this
// binary as one, or runs the tests; it does not return. Call it from
// TestMain. A design already registered with impls.Register (in an init
// function) must not be passed again: a name registers once.
func Main(m *testing.M, designs ...impls.Design) {
	for _, d := range designs {
		impls.Register(d)
	}
	if len(os.Args) > 1 && os.Args[1] == runner.WorkerCommand {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	cli.SetLogging(os.Stderr)
	// As in cli.Main: a process a run's child detached is reparented
	// here, and killed with the rest when the tests end.
	if err := cluster.BecomeSubreaper(); err != nil {
		slog.Warn("processes that detach from a run may outlive the tests", "err", err)
	}
	mainRan = true
	code := m.Run()
	cluster.KillAll()
	os.Exit(code)
}

// Outcome is what a test expects of the protected data.
type Outcome string

const (
	// Safe: the run's verdict is valid (the default).
	Safe Outcome = "safe"
	// Unsafe: the run's verdict is invalid: the lock is known to fail
	// under the scenario, and the test asserts that locktest shows it.
	Unsafe Outcome = "unsafe"
)

// verdicts are the verdicts each outcome accepts. An unknown verdict (a
// checker timeout, a broken client, faults that never struck) matches
// neither: it proves nothing either way.
var verdicts = map[Outcome]checker.Verdict{Safe: checker.Valid, Unsafe: checker.Invalid}

// testCase is what the options build: the run's settings and the outcome
// the test expects.
type testCase struct {
	cfg    scenario.Config
	expect Outcome
}

// Option sets one thing about the scenario Run runs.
type Option func(*testCase) error

// Set sets any setting of locktest run by its flag name, without the
// dashes, to a value as the command line spells it: Set("ttl", "500ms"),
// Set("fault-target", "holder"). locktest run --help lists them. The
// design is Run's argument, not a setting.
func Set(flag, value string) Option {
	return func(sc *testCase) error {
		s, ok := scenario.SettingByFlag(flag)
		if !ok || flag == "impl" || flag == "exec-cmd" || flag == "exec-servers" {
			return fmt.Errorf("no setting --%s for a Go design (locktest run --help lists them)", flag)
		}
		if err := s.Value(&sc.cfg).Set(value); err != nil {
			return fmt.Errorf("--%s %q: %w", flag, value, err)
		}
		return nil
	}
}

// Fault sets the faults to inject (locktest list faults); default none.
// A name "a+b" is a pair whose two faults strike together (Set
// "fault-duration2" for the second's length).
func Fault(names ...string) Option { return Set("fault", strings.Join(names, ",")) }

// Workload sets what each client does (locktest list workloads); default
// counter.
func Workload(name string) Option { return Set("workload", name) }

// Duration sets how long the clients run before the final heal; default
// 15s.
func Duration(d time.Duration) Option { return Set("duration", d.String()) }

// Clients sets the number of client processes; default 5.
func Clients(n int) Option { return Set("clients", fmt.Sprint(n)) }

// Seed sets the seed of the fault schedule and the clients' choices;
// default 1.
func Seed(n int64) Option { return Set("seed", fmt.Sprint(n)) }

// Store sets the directory runs are stored in; default locktest under
// os.TempDir(). Every run is kept there, its report.html included.
func Store(dir string) Option { return Set("store", dir) }

// Expect sets the outcome the test asserts; default Safe.
func Expect(o Outcome) Option {
	return func(sc *testCase) error {
		if _, ok := verdicts[o]; !ok {
			return fmt.Errorf("Expect(%q): want locktesting.Safe or locktesting.Unsafe", o)
		}
		sc.expect = o
		return nil
	}
}

// Run runs one scenario of design, which Main must have registered, and
// fails t unless the verdict is the expected outcome: the message gives
// the verdict, the summary's key lines, the report's path and the go test
// command that runs the scenario again. Bad options and missing server
// binaries (with the package that provides them) fail t before anything
// starts; Run never skips. It returns the run's results for further
// assertions. Do not make Run's tests parallel: runs at once would share
// the CPU, and a fault's timing, a lease and a pause, is what they test.
func Run(t *testing.T, design impls.Design, opts ...Option) reports.Results {
	t.Helper()
	if !mainRan {
		t.Fatalf("locktesting.Run: call locktesting.Main from TestMain: func TestMain(m *testing.M) { locktesting.Main(m, design) }; the worker processes are this test binary, and only Main makes them workers")
	}
	if _, err := impls.Lookup(design.Name); err != nil {
		t.Fatalf("locktesting.Run: design %q is not registered: pass it to locktesting.Main in TestMain, so that the worker processes have it too (%v)", design.Name, err)
	}
	sc := testCase{cfg: scenario.Defaults(), expect: Safe}
	sc.cfg.Impl = design.Name
	sc.cfg.Store = defaultStore()
	// The test's process shares the network of the test binary's other
	// tests, so it cannot move into a namespace of its own as locktest
	// run does: its links are the proxy's.
	sc.cfg.Network = runner.NetworkProxy
	for _, opt := range opts {
		if err := opt(&sc); err != nil {
			t.Fatalf("locktesting.Run: %v", err)
		}
	}
	resolved, err := runner.Resolve(sc.cfg)
	if err != nil {
		t.Fatalf("locktesting.Run: %v", err)
	}
	if resolved.NetworkNote != "" {
		t.Logf("locktest note: %s", resolved.NetworkNote)
	}
	for _, w := range runner.Warnings(resolved) {
		t.Logf("locktest warning: %s", w)
	}
	resolved.Reproduce = goTestCommand(t.Name())
	res, err := runner.Run(t.Context(), resolved)
	var bad *runner.BadConfigError
	switch {
	case errors.As(err, &bad):
		t.Fatalf("locktesting.Run: %v", err)
	case err != nil && res.Dir != "":
		t.Fatalf("locktesting.Run: %v (run directory %s)", err, res.Dir)
	case err != nil:
		t.Fatalf("locktesting.Run: %v", err)
	}
	var summary bytes.Buffer
	reports.Summary(&summary, res)
	if res.Verdict != verdicts[sc.expect] {
		t.Errorf("locktest: %s, verdict %s, want %s\n%s    reproduce %s",
			res.Scenario, strings.ToUpper(string(res.Verdict)), sc.expect, keyLines(summary.String()), res.Command)
		return res
	}
	t.Logf("locktest: %s as expected\n%s", sc.expect, summary.String())
	return res
}

// defaultStore is where Run stores runs without a Store option: locktest
// under os.TempDir(), not the package's directory, which go test should
// leave as it found it.
func defaultStore() string { return filepath.Join(os.TempDir(), "locktest") }

// keyWords are the first words of the summary lines a failure shows: what
// happened to the protected data, whether the faults took effect, each
// check's verdict, the notes (why a verdict is unknown), the verdict and
// where the report is. The violations' operations are in the report.
var keyWords = map[string]bool{"resource": true, "efficacy": true, "check": true, "note": true, "verdict": true, "report": true}

// keyLines picks the key lines out of a run's summary, indented.
func keyLines(summary string) string {
	var b strings.Builder
	for _, l := range strings.Split(summary, "\n") {
		if word, _, _ := strings.Cut(l, " "); keyWords[word] {
			b.WriteString("    " + l + "\n")
		}
	}
	return b.String()
}

// goTestCommand is the go test command that runs test again: the test
// alone, uncached, in its own package.
func goTestCommand(test string) string {
	pkg := "."
	if bi, ok := debug.ReadBuildInfo(); ok {
		pkg = testedPackage(bi.Path)
	}
	return fmt.Sprintf("go test -run %s -count=1 %s", scenario.ShellQuote(runPattern(test)), pkg)
}

// runPattern is the -run pattern that matches test (a subtest's name
// holds its parents', separated by '/') and no other.
func runPattern(test string) string {
	parts := strings.Split(test, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// testedPackage is the package a test binary tests, from the main path
// its build information gives: go test builds a package's tests as
// PATH.test, a main package's as PATH, and files named on the command
// line as command-line-arguments, which only "." can name again.
func testedPackage(main string) string {
	if main == "" || main == "command-line-arguments" {
		return "."
	}
	return strings.TrimSuffix(main, ".test")
}
