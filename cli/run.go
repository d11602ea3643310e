package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
)

// runFlags binds the flags of `run`, one per runner.Setting, to a Config,
// and --progress to progress. --progress is no Setting: it changes what
// the user sees, not what the run does, so it is neither in config.json nor
// in the command that reproduces a run, and a suite's runs, which have
// their own status line, never take it.
func runFlags(cfg *runner.Config, progress *live.Mode, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("locktest run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, s := range runner.Settings {
		fs.Var(s.Value(cfg), s.Flag, s.Help)
	}
	fs.Var(progress, "progress", progressHelp)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: locktest run --impl NAME [flags]\n\nRuns one scenario on real servers and client processes, checks it and exits\n0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 internal error.\n\nflags:")
		runner.PrintSettings(fs.Output())
		fmt.Fprintf(fs.Output(), "\ndisplay (not part of the run):\n  --progress MODE  %s (default %s)\n", progressHelp, live.Auto)
	}
	return fs
}

const progressHelp = "progress on stderr while the run goes: auto (tty on a terminal, else plain), " +
	"tty (one status line redrawn: phase, elapsed/total, ops, acquisitions, faults active, lost updates so far), " +
	"plain (a line per phase and every 5 s), none"

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := runner.Defaults()
	progress := live.Auto
	fs := runFlags(&cfg, &progress, stderr)
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if !needImpl(fs, cfg, stderr) {
		return exitBadArgs
	}
	resolved, err := runner.Resolve(cfg)
	if err != nil {
		return exitCode(err, stderr)
	}
	for _, w := range runner.Warnings(resolved) {
		fmt.Fprintln(stderr, "locktest run: warning:", w)
	}
	res, err := runObserved(ctx, resolved, progress.Resolve(stderr), stderr)
	if err != nil {
		if res.Dir != "" {
			fmt.Fprintf(stderr, "locktest: run directory %s (locktest analyze %s)\n", res.Dir, res.Dir)
		}
		return exitCode(err, stderr)
	}
	reports.Summary(stdout, res)
	return verdictCode(res.Verdict)
}

// runObserved runs the scenario with a progress display in mode on
// stderr. While it shows, log records go through it too, so that a warning
// never lands in the middle of the status line; it is gone (the line
// erased) before the caller prints the summary or an error.
func runObserved(ctx context.Context, cfg runner.Resolved, mode live.Mode, stderr io.Writer) (reports.Results, error) {
	if mode == live.None {
		return runner.Run(ctx, cfg)
	}
	d := live.NewDisplay(stderr, mode)
	defer d.Close()
	logger := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(d, &slog.HandlerOptions{Level: logLevel()})))
	defer slog.SetDefault(logger)
	return runner.RunObserved(ctx, cfg, runner.Observer{Phase: d.Phase, Stderr: d})
}

// parse parses flags, keeping a bad flag to one line (flag would print the
// whole usage after it) and printing the usage on stdout for --help.
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return exitValid, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v; see %s --help\n", fs.Name(), err, fs.Name())
		return exitBadArgs, false
	}
	return 0, true
}

// parsePositional parses flags placed before, between or after the
// positional arguments (locktest compare store --out cmp) and returns the
// positional ones. parse silences the usage; each round restores it.
func parsePositional(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, int, bool) {
	usage := fs.Usage
	var pos []string
	for rest := args; ; {
		fs.Usage = usage
		if code, ok := parse(fs, rest, stdout, stderr); !ok {
			return nil, code, false
		}
		if fs.NArg() == 0 {
			return pos, 0, true
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

func verdictCode(v checker.Verdict) int {
	switch v {
	case checker.Valid:
		return exitValid
	case checker.Invalid:
		return exitInvalid
	default:
		return exitUnknown
	}
}

func cmdAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("locktest analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := runner.Duration(0)
	fs.Var(&timeout, "check-timeout", "time limit of each porcupine check (default: the run's)")
	noReport := fs.Bool("no-report", false, "check and print the summary only; leave the run directory as it is")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: locktest analyze [flags] <run dir>\n\nRe-checks a stored history (a truncated one too) and rewrites the report.\nNo server is started.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "locktest analyze: give exactly one run directory, e.g. store/latest")
		return exitBadArgs
	}
	dir, err := filepath.EvalSymlinks(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "locktest analyze: %v\n", err)
		return exitBadArgs
	}
	resolved, err := runner.LoadRun(dir)
	if err != nil {
		fmt.Fprintf(stderr, "locktest analyze: %v\n", err)
		return exitBadArgs
	}
	if timeout > 0 {
		resolved.CheckTimeout = timeout
	}
	res, err := runner.AnalyzeContext(ctx, dir, resolved, !*noReport)
	if err != nil {
		return exitCode(err, stderr)
	}
	if *noReport {
		res.Notes = append(res.Notes, "--no-report: the files in the run directory are from an earlier check")
	}
	reports.Summary(stdout, res)
	return verdictCode(res.Verdict)
}

// bindSettings binds the named settings of run's table to base, as the
// flags of a command that frames many runs (explore, envelope): the same
// names and meaning as in run, help replaced where given.
func bindSettings(fs *flag.FlagSet, base *runner.Config, help map[string]string, names ...string) {
	for _, name := range names {
		s, ok := runner.SettingByFlag(name)
		if !ok {
			panic("cli: no setting " + name)
		}
		h := s.Help
		if alt, ok := help[name]; ok {
			h = alt
		}
		fs.Var(s.Value(base), s.Flag, h)
	}
}

// needImpl refuses stray arguments and a missing --impl, one line each.
func needImpl(fs *flag.FlagSet, base runner.Config, stderr io.Writer) bool {
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: unexpected argument %q; see %s --help\n", fs.Name(), fs.Arg(0), fs.Name())
		return false
	case base.Impl == "":
		fmt.Fprintf(stderr, "%s: --impl is required (locktest list impls)\n", fs.Name())
		return false
	}
	return true
}
