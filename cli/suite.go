package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/suite"
)

const suiteLong = `A suite file lists scenarios (design, workload, fault, settings, seeds) with the
outcome each should have; locktest suite check validates one without running it.

suite run: runs every scenario × seed and judges each against its expectation.
Runs go in <out>/runs/; <out> also gets summary.md (Markdown), junit.xml,
suite.json and the designs × faults comparison (compare.html, .png, .md,
.json). Exit 0: every run matched its expectation; 1: some did not; 255: a
run could not finish; 254: bad input (nothing started); 130: interrupted.

suite merge: combines the outputs of suite run --shard i/n into the files one
whole run writes, into --out (default store/suites/<suite>/<time>-merged;
refused when it exists and is not empty). Outputs of other suite files,
builds or selections, or duplicate shards: 254, nothing written. Exit codes
as suite run's, and 2 when shards are missing (the reports say which) and no
run failed.`

func suiteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suite COMMAND",
		Short: "run, check or merge suites of scenarios with expected outcomes (CI)",
		Long:  suiteLong,
		Args:  cobra.ArbitraryArgs,
		RunE:  unknownCommand,
	}
	cmd.AddCommand(suiteRunCommand(), suiteCheckCommand(), suiteMergeCommand())
	return cmd
}

// suiteFile is the positional argument of suite run and suite check.
func suiteFile(_ *cobra.Command, args []string) error {
	switch len(args) {
	case 0:
		return errors.New("give the suite file, e.g. suites/quick.yaml")
	case 1:
		return nil
	}
	return fmt.Errorf("unexpected argument %q: give one suite file", args[1])
}

func suiteCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "check FILE",
		Short:             "validate a suite file (exit 0, or 254 naming file:line)",
		Args:              suiteFile,
		ValidArgsFunction: completeSuiteFile,
		RunE: exits(func(cmd *cobra.Command, args []string) int {
			path := args[0]
			f, err := suite.Load(path)
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), prog+":", err)
				return exitBadArgs
			}
			runs, unmeasured := 0, 0
			for _, sc := range f.Scenarios {
				runs += len(sc.Runs)
				if sc.Unmeasured {
					unmeasured++
				}
			}
			var matrix string
			if len(f.Matrix) > 0 {
				matrix = fmt.Sprintf(" (matrix of %d cells, %d at its default expectation)", len(f.Matrix), unmeasured)
			}
			var sweeps string
			if len(f.Sweeps) > 0 {
				sweeps = fmt.Sprintf(", %d envelopes", len(f.Sweeps))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: suite %s, %d scenarios%s, %d runs%s: valid\n", path, f.Name, len(f.Scenarios), matrix, runs, sweeps)
			return exitValid
		}),
	}
}

// parallelDefault is how the help gives --parallel's default, which
// depends on the machine: generated docs must not.
const parallelDefault = "one per core, at most 4"

// suiteRunFlags binds the flags that say how to run a suite (suite run's,
// and compare --run's for its campaign) to opt.
func suiteRunFlags(fs *pflag.FlagSet, opt *suite.Options, with string) {
	fs.IntVar(&opt.Parallel, "parallel", suite.DefaultParallel(), with+"runs at once")
	fs.Lookup("parallel").DefValue = parallelDefault
	fs.IntVar(&opt.Seeds, "seeds", 0, with+"run every scenario with seeds 1..N instead of its own (detection rates)")
	fs.StringVar(&opt.Backend, "backend", "", with+"run every scenario's servers as local processes or docker containers (default: each scenario's own, local)")
	fs.StringVar(&opt.Network, "network", "", with+"make every scenario's link faults in network namespaces (netns), with a proxy (proxy), or whichever the machine allows (auto) (default: each scenario's own)")
}

func suiteRunCommand() *cobra.Command {
	var opt suite.Options
	var filter, shard string
	cmd := &cobra.Command{
		Use:               "run FILE [flags]",
		Short:             "run every scenario × seed, judge each against its expectation; exit 0 only when all match",
		Args:              suiteFile,
		ValidArgsFunction: completeSuiteFile,
		RunE: exits(func(cmd *cobra.Command, args []string) int {
			return runSuite(cmd.Context(), args[0], opt, filter, shard, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&opt.Out, "out", "", "directory for the run directories and reports (default store/suites/<suite>/<time>)")
	suiteRunFlags(fs, &opt, "")
	fs.StringVar(&filter, "run", "", "only the scenarios whose name matches this regular expression")
	fs.StringVar(&shard, "shard", "", "run only part `i/n` of the selected runs (1 ≤ i ≤ n), balanced by expected time; combine with suite merge")
	completeSetting(cmd, "backend")
	return cmd
}

// runSuite validates suite run's options, then runs the suite file at
// path and writes its reports: suite run, and compare --run's campaign.
func runSuite(ctx context.Context, path string, opt suite.Options, filter, shard string, stdout, stderr io.Writer) int {
	if opt.Parallel < 1 || opt.Seeds < 0 {
		fmt.Fprintln(stderr, prog+" suite run: --parallel must be at least 1 and --seeds not negative")
		return exitBadArgs
	}
	if err := cluster.CheckBackend(opt.Backend); err != nil {
		fmt.Fprintln(stderr, prog+" suite run: --backend:", err)
		return exitBadArgs
	}
	if shard != "" {
		s, err := suite.ParseShard(shard)
		if err != nil {
			fmt.Fprintln(stderr, prog+" suite run: --shard:", err)
			return exitBadArgs
		}
		opt.Shard = &s
	}
	if filter != "" {
		re, err := regexp.Compile(filter)
		if err != nil {
			fmt.Fprintf(stderr, "%s suite run: --run: %v\n", prog, err)
			return exitBadArgs
		}
		opt.Filter = re
	}
	f, err := suite.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, prog+":", err)
		return exitBadArgs
	}
	if opt.Out == "" {
		opt.Out = filepath.Join("store", "suites", f.Name, time.Now().Format("20060102T150405"))
		if opt.Shard != nil {
			opt.Out += fmt.Sprintf("-shard%dof%d", opt.Shard.Index, opt.Shard.Count)
		}
	}
	if needsLab(f, opt) && !cluster.InLab() {
		return rerunInLab(stderr)
	}
	opt.Progress, opt.Terminal = stderr, live.IsTerminal(stderr)
	rep, err := suite.Run(ctx, f, opt)
	if err != nil {
		return exitCode(err, stderr)
	}
	if err := rep.Write(rep.Out); err != nil {
		fmt.Fprintln(stderr, prog+":", err)
		return exitInternal
	}
	rep.Print(stdout)
	if rep.Interrupted {
		fmt.Fprintln(stderr, prog+": suite interrupted; every process was stopped")
	}
	return suiteExit(rep)
}

// suiteExit is the exit code of a suite's report, whole or merged: 130
// when interrupted, 0 when every run matched its expectation, 1 when some
// run did not, 2 when shards are missing (nothing failed, but not every
// run is known), 255 when a run could not finish.
func suiteExit(rep suite.Report) int {
	switch {
	case rep.Interrupted:
		return exitInterrupted
	case rep.Passed():
		return exitValid
	}
	for _, o := range rep.Outcomes {
		if o.Status == suite.Fail {
			return exitInvalid
		}
	}
	if len(rep.Missing) > 0 {
		return exitUnknown
	}
	return exitInternal
}

func suiteMergeCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:               "merge DIR... [flags]",
		Short:             "combine the outputs of suite run --shard i/n into the reports one whole run writes",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeDirs,
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for the merged reports; must not exist or be empty (default store/suites/<suite>/<time>-merged)")
	cmd.RunE = exits(func(cmd *cobra.Command, dirs []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if len(dirs) == 0 {
			fmt.Fprintln(stderr, prog+" suite merge: give the output directories of suite run --shard i/n")
			return exitBadArgs
		}
		if out == "" {
			first, err := suite.ReadReport(dirs[0])
			if err != nil {
				fmt.Fprintf(stderr, "%s suite merge: %s: not a suite output: %v\n", prog, dirs[0], errors.Unwrap(err))
				return exitBadArgs
			}
			out = filepath.Join("store", "suites", first.Suite, time.Now().Format("20060102T150405")+"-merged")
		}
		rep, err := suite.Merge(dirs, out)
		if err != nil {
			return exitCode(err, stderr)
		}
		if err := rep.WriteMerged(); err != nil {
			fmt.Fprintln(stderr, prog+":", err)
			return exitInternal
		}
		rep.Print(stdout)
		if rep.Interrupted {
			fmt.Fprintln(stderr, prog+": a shard was interrupted: its unfinished runs count as not run")
		}
		return suiteExit(rep)
	})
	return cmd
}

// needsLab reports whether a run of the suite uses the lab (--network
// netns, or auto where the machine allows it).
func needsLab(f *suite.File, opt suite.Options) bool {
	for _, sc := range f.Scenarios {
		for _, r := range sc.Runs {
			cfg := r.Config
			cfg.Network = cmp.Or(opt.Network, r.AskedNetwork)
			if opt.Backend != "" {
				cfg.Backend = opt.Backend
			}
			if runner.Network(cfg) == runner.NetworkNetns {
				return true
			}
		}
	}
	return false
}
