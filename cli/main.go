package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/cluster/container"
	"github.com/locktest/locktest/runner"
)

// Exit codes, as Jepsen's.
const (
	exitValid    = 0
	exitInvalid  = 1
	exitUnknown  = 2
	exitBadArgs  = 254
	exitInternal = 255
	// exitInterrupted follows the shell's 128+SIGINT.
	exitInterrupted = 130
)

const usage = `locktest: Jepsen-style tests of distributed locks on real processes

usage:
  locktest run [flags]          run one scenario (locktest run --help); progress on stderr
  locktest explore --impl NAME  search for an anomaly with no tuning, shrink it, or report coverage
  locktest envelope --impl NAME --fault F
                                how big a fault the design survives: bisect the fault's magnitude
  locktest analyze <run dir>    re-check a stored history and rewrite its report
  locktest compare <dirs>...    designs × faults matrix of stored runs (HTML, PNG, Markdown, JSON)
  locktest serve [STORE]        browse the store on http://127.0.0.1:8080/: runs, verdicts,
                                reports, the comparison, runs in progress as they go
  locktest suite run <file>     run a suite of scenarios with expected outcomes (CI)
  locktest suite check <file>   validate a suite file
  locktest list [impls|workloads|faults]
                                what can be run, one line each
  locktest images build         build the images of --backend docker from this machine's binaries
  locktest version              this binary's version and revision, and the installed servers'
  locktest help [COMMAND]       this text, or a command's own help
`

// Main runs the locktest command line with args (without the program name)
// and returns the exit code. It is the whole of cmd/locktest, and a user's
// own main calls it after registering their design with impls.Register:
// the workers are spawned from os.Executable(), so the user's binary, with
// the design compiled in, is the worker too.
func Main(args []string, stdout, stderr io.Writer) int {
	SetLogging(stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadArgs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Whatever happens below, no child outlives this process, nor any
	// process a child started: orphans below it are reparented to it.
	if err := cluster.BecomeSubreaper(); err != nil {
		slog.Warn("processes that detach from the run may outlive it", "err", err)
	}
	defer cluster.KillAll()

	if args[0] == "run" || args[0] == "suite" || args[0] == "explore" || args[0] == "envelope" {
		defer container.StopTopology()
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "explore":
		return cmdExplore(ctx, args[1:], stdout, stderr)
	case "envelope":
		return cmdEnvelope(ctx, args[1:], stdout, stderr)
	case "analyze":
		return cmdAnalyze(ctx, args[1:], stdout, stderr)
	case "compare":
		return cmdCompare(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "list":
		return cmdList(args[1:], stdout, stderr)
	case "suite":
		return cmdSuite(ctx, args[1:], stdout, stderr)
	case "images":
		return cmdImages(ctx, args[1:], stdout, stderr)
	case container.WatchdogCommand:
		return cmdWatchdog(args[1:], stderr)
	case container.NodeExecCommand:
		if len(args) != 2 {
			fmt.Fprintln(stderr, "locktest", container.NodeExecCommand+": give the node spec file")
			return exitBadArgs
		}
		if err := container.NodeExec(args[1]); err != nil {
			fmt.Fprintln(stderr, "locktest", container.NodeExecCommand+":", err)
			return exitInternal
		}
		return exitValid
	case runner.WorkerCommand:
		if err := runner.Worker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(stderr, "locktest worker:", err)
			return exitInternal
		}
		return exitValid
	case "version":
		return cmdVersion(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		if len(args) == 1 || args[0] != "help" {
			fmt.Fprint(stdout, usage)
			return exitValid
		}
		if !slices.Contains(commands, args[1]) {
			fmt.Fprintf(stderr, "locktest help: unknown command %q (valid: %s)\n", args[1], strings.Join(commands, ", "))
			return exitBadArgs
		}
		// locktest help suite run: locktest suite run --help.
		return Main(append(slices.Clone(args[1:]), "--help"), stdout, stderr)
	default:
		fmt.Fprintf(stderr, "locktest: unknown command %q (valid: %s); see locktest --help\n", args[0], strings.Join(commands, ", "))
		return exitBadArgs
	}
}

// commands are the commands the usage lists, which help explains.
var commands = []string{"run", "explore", "envelope", "analyze", "compare", "serve", "suite", "list", "images", "version"}

// exitCode maps an error from the runner to an exit code, printing it on
// one line.
func exitCode(err error, stderr io.Writer) int {
	var bad *runner.BadConfigError
	switch {
	case errors.As(err, &bad):
		fmt.Fprintln(stderr, "locktest:", err)
		return exitBadArgs
	case errors.Is(err, runner.ErrInterrupted):
		fmt.Fprintln(stderr, "locktest: interrupted; every process was stopped")
		return exitInterrupted
	default:
		fmt.Fprintln(stderr, "locktest: internal error:", err)
		return exitInternal
	}
}

// SetLogging sends log/slog's records to w: warnings and errors, or
// everything with LOCKTEST_DEBUG set. Main calls it; so does a test binary
// under locktesting, whose coordinator runs without Main.
func SetLogging(w io.Writer) {
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: logLevel()})))
}

func logLevel() slog.Level {
	if os.Getenv("LOCKTEST_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
