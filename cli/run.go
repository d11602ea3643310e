package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// runFlags binds the flags of `run`, one per scenario.Setting, to a Config,
// and --progress to progress. --progress is no Setting: it changes what
// the user sees, not what the run does, so it is neither in config.json nor
// in the command that reproduces a run, and a suite's runs, which have
// their own status line, never take it.
func runFlags(cfg *scenario.Config, progress *live.Mode) *pflag.FlagSet {
	fs := pflag.NewFlagSet(prog+" run", pflag.ContinueOnError)
	for _, s := range scenario.Settings {
		bindSetting(fs, s, cfg, s.Help)
	}
	fs.Var(progressFlag{progress}, "progress", progressHelp)
	return fs
}

// progressFlag is --progress as a pflag value, named MODE in the help.
type progressFlag struct{ *live.Mode }

func (progressFlag) Type() string { return "MODE" }

const progressHelp = "display only, not part of the run: progress on stderr while the run goes: auto (tty on a terminal, else plain), " +
	"tty (one status line redrawn: phase, elapsed/total, ops, acquisitions, faults active, lost updates so far), " +
	"plain (a line per phase and every 5 s), none"

func runCommand() *cobra.Command {
	cfg := scenario.Defaults()
	progress := live.Auto
	cmd := &cobra.Command{
		Use:   "run --impl NAME [flags]",
		Short: "run one scenario; progress on stderr",
		Long: `Runs one scenario on real servers and client processes, checks it and exits
0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 internal error, 130
interrupted. The summary ends with the command that reproduces the run.`,
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().SortFlags = false // the table's order, which groups related settings
	cmd.Flags().AddFlagSet(runFlags(&cfg, &progress))
	for _, s := range scenario.Settings {
		completeSetting(cmd, s.Flag)
	}
	if err := cmd.RegisterFlagCompletionFunc("progress", completeProgress); err != nil {
		panic(err)
	}
	cmd.RunE = exits(func(cmd *cobra.Command, _ []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if !needImpl(cmd, cfg) {
			return exitBadArgs
		}
		resolved, err := runner.Resolve(cfg)
		if err != nil {
			return exitCode(err, stderr)
		}
		if resolved.Network == runner.NetworkNetns && !cluster.InLab() {
			return rerunInLab(stderr)
		}
		if resolved.NetworkNote != "" {
			fmt.Fprintln(stderr, prog+" run: note:", resolved.NetworkNote)
		}
		for _, w := range runner.Warnings(resolved) {
			fmt.Fprintln(stderr, prog+" run: warning:", w)
		}
		res, err := runObserved(cmd.Context(), resolved, progress.Resolve(stderr), stderr)
		if err != nil {
			if res.Dir != "" {
				fmt.Fprintf(stderr, "%s: run directory %s (%s analyze %s)\n", prog, res.Dir, prog, res.Dir)
			}
			return exitCode(err, stderr)
		}
		reports.Summary(stdout, res)
		return verdictCode(res.Verdict)
	})
	return cmd
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
	d.SetGrace(time.Duration(cfg.TTL))
	logger := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(d, &slog.HandlerOptions{Level: logLevel()})))
	defer slog.SetDefault(logger)
	return runner.RunObserved(ctx, cfg, runner.Observer{Phase: d.Phase, Stderr: d})
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

func analyzeCommand() *cobra.Command {
	timeout := scenario.Duration(0)
	var noReport bool
	cmd := &cobra.Command{
		Use:   "analyze [flags] RUN_DIR",
		Short: "re-check a stored history and rewrite its report",
		Long: `Re-checks a stored history (a truncated one too) and rewrites the report.
No server is started. Exits with the verdict, as run does.`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeDirs,
	}
	cmd.Flags().Var(&timeout, "check-timeout", "time limit of the porcupine checks, both models together (default: the run's)")
	cmd.Flags().BoolVar(&noReport, "no-report", false, "check and print the summary only; leave the run directory as it is")
	cmd.RunE = exits(func(cmd *cobra.Command, args []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if len(args) != 1 {
			fmt.Fprintln(stderr, prog+" analyze: give exactly one run directory, e.g. store/latest")
			return exitBadArgs
		}
		dir, err := filepath.EvalSymlinks(args[0])
		if err != nil {
			fmt.Fprintf(stderr, "%s analyze: %v\n", prog, err)
			return exitBadArgs
		}
		resolved, err := runner.LoadRun(dir)
		if err != nil {
			fmt.Fprintf(stderr, "%s analyze: %v\n", prog, err)
			return exitBadArgs
		}
		if timeout > 0 {
			resolved.CheckTimeout = timeout
		}
		res, err := runner.AnalyzeContext(cmd.Context(), dir, resolved, !noReport)
		if err != nil {
			return exitCode(err, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, reports.ResultsFile)); noReport && err == nil {
			res.Notes = append(res.Notes, "--no-report: the files in the run directory are from an earlier check")
		}
		reports.Summary(stdout, res)
		return verdictCode(res.Verdict)
	})
	return cmd
}

// noArgs refuses positional arguments, for the commands that take flags
// only.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}

// needImpl refuses a missing --impl in one line.
func needImpl(cmd *cobra.Command, base scenario.Config) bool {
	if base.Impl == "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: --impl is required (%s list impls)\n", cmd.CommandPath(), prog)
		return false
	}
	return true
}

// rerunInLab runs this command line again in a network namespace of its
// own, where a run's lab lives (cluster.RerunInLab), and exits as it does.
func rerunInLab(stderr io.Writer) int {
	code, err := cluster.RerunInLab(mainArgs)
	if err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
		return exitBadArgs
	}
	return code
}
