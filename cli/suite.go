package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/suite"
)

const suiteUsage = `usage:
  locktest suite run <file> [flags]   run every scenario × seed, judge each against its
                                      expectation; exit 0 only when all match
  locktest suite check <file>         validate the file only (exit 0, or 254 naming file:line)
  locktest suite merge <dir>... [--out DIR]
                                      combine the outputs of suite run --shard i/n into the
                                      reports one whole run writes; exit as that run would
`

func cmdSuite(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, suiteUsage)
		return exitBadArgs
	}
	switch args[0] {
	case "run":
		return cmdSuiteRun(ctx, args[1:], stdout, stderr)
	case "check":
		return cmdSuiteCheck(args[1:], stdout, stderr)
	case "merge":
		return cmdSuiteMerge(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fs := suiteRunFlags(&suite.Options{}, new(string), new(string))
		fs.SetOutput(stdout)
		fs.Usage()
		return exitValid
	default:
		fmt.Fprintf(stderr, "locktest suite: unknown command %q (valid: run, check, merge)\n", args[0])
		return exitBadArgs
	}
}

// parseInterleaved parses flags placed before or after the one positional
// argument (locktest suite run suites/quick.yaml --out reports).
func parseInterleaved(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (string, int, bool) {
	pos, code, ok := parsePositional(fs, args, stdout, stderr)
	switch {
	case !ok:
		return "", code, false
	case len(pos) == 0:
		fmt.Fprintf(stderr, "%s: give the suite file, e.g. suites/quick.yaml\n", fs.Name())
		return "", exitBadArgs, false
	case len(pos) > 1:
		fmt.Fprintf(stderr, "%s: unexpected argument %q: give one suite file\n", fs.Name(), pos[1])
		return "", exitBadArgs, false
	}
	return pos[0], 0, true
}

func cmdSuiteCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("locktest suite check", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), suiteUsage) }
	path, code, ok := parseInterleaved(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	f, err := suite.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
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
	fmt.Fprintf(stdout, "%s: suite %s, %d scenarios%s, %d runs%s: valid\n", path, f.Name, len(f.Scenarios), matrix, runs, sweeps)
	return exitValid
}

// suiteRunFlags binds suite run's flags to opt, filter and shard; its
// usage is the whole of suite's help, since check has no flags.
func suiteRunFlags(opt *suite.Options, filter, shard *string) *flag.FlagSet {
	fs := flag.NewFlagSet("locktest suite run", flag.ContinueOnError)
	fs.StringVar(&opt.Out, "out", "", "directory for the run directories and reports (default store/suites/<suite>/<time>)")
	fs.IntVar(&opt.Parallel, "parallel", suite.DefaultParallel(), "runs at once: one per core, at most 4, by default")
	fs.IntVar(&opt.Seeds, "seeds", 0, "run every scenario with seeds 1..N instead of its own (detection rates)")
	fs.StringVar(filter, "run", "", "only the scenarios whose name matches this regular expression")
	fs.StringVar(shard, "shard", "", "run only part `i/n` of the selected runs (1 ≤ i ≤ n), balanced by expected time; combine with suite merge")
	fs.StringVar(&opt.Backend, "backend", "", "run every scenario's servers as local processes or docker containers (default: each scenario's own, local)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), suiteUsage, "\nA suite file lists scenarios (design, workload, fault, settings, seeds) with the\noutcome each should have; locktest suite check validates one without running it.\n\nsuite run: runs go in <out>/runs/; <out> also gets summary.md (Markdown),\njunit.xml, suite.json and the designs × faults comparison (compare.html, .png,\n.md, .json). Exit 0: every run matched its expectation; 1: some did not;\n255: a run could not finish; 254: bad input (nothing started); 130: interrupted.\n\nsuite merge: the same files from shard outputs, into --out (default\nstore/suites/<suite>/<time>-merged; refused when it exists and is not empty).\nOutputs of other suite files, builds or selections, or duplicate shards: 254,\nnothing written. Exit codes as suite run's, and 2 when shards are missing\n(the reports say which) and no run failed.\n\nflags of suite run (suite check takes none, suite merge only --out):\n")
		fs.PrintDefaults()
	}
	return fs
}

func cmdSuiteRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var opt suite.Options
	var filter, shard string
	fs := suiteRunFlags(&opt, &filter, &shard)
	path, code, ok := parseInterleaved(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if opt.Parallel < 1 || opt.Seeds < 0 {
		fmt.Fprintln(stderr, "locktest suite run: --parallel must be at least 1 and --seeds not negative")
		return exitBadArgs
	}
	if err := cluster.CheckBackend(opt.Backend); err != nil {
		fmt.Fprintln(stderr, "locktest suite run: --backend:", err)
		return exitBadArgs
	}
	if shard != "" {
		s, err := suite.ParseShard(shard)
		if err != nil {
			fmt.Fprintln(stderr, "locktest suite run: --shard:", err)
			return exitBadArgs
		}
		opt.Shard = &s
	}
	if filter != "" {
		re, err := regexp.Compile(filter)
		if err != nil {
			fmt.Fprintf(stderr, "locktest suite run: --run: %v\n", err)
			return exitBadArgs
		}
		opt.Filter = re
	}
	f, err := suite.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
		return exitBadArgs
	}
	if opt.Out == "" {
		opt.Out = filepath.Join("store", "suites", f.Name, time.Now().Format("20060102T150405"))
		if opt.Shard != nil {
			opt.Out += fmt.Sprintf("-shard%dof%d", opt.Shard.Index, opt.Shard.Count)
		}
	}
	opt.Progress, opt.Terminal = stderr, live.IsTerminal(stderr)
	rep, err := suite.Run(ctx, f, opt)
	if err != nil {
		return exitCode(err, stderr)
	}
	if err := rep.Write(rep.Out); err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
		return exitInternal
	}
	rep.Print(stdout)
	if rep.Interrupted {
		fmt.Fprintln(stderr, "locktest: suite interrupted; every process was stopped")
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

func cmdSuiteMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("locktest suite merge", flag.ContinueOnError)
	out := fs.String("out", "", "directory for the merged reports; must not exist or be empty (default store/suites/<suite>/<time>-merged)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), suiteUsage); fs.PrintDefaults() }
	dirs, code, ok := parsePositional(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "locktest suite merge: give the output directories of suite run --shard i/n")
		return exitBadArgs
	}
	if *out == "" {
		first, err := suite.ReadReport(dirs[0])
		if err != nil {
			fmt.Fprintf(stderr, "locktest suite merge: %s: not a suite output: %v\n", dirs[0], errors.Unwrap(err))
			return exitBadArgs
		}
		*out = filepath.Join("store", "suites", first.Suite, time.Now().Format("20060102T150405")+"-merged")
	}
	rep, err := suite.Merge(dirs, *out)
	if err != nil {
		return exitCode(err, stderr)
	}
	if err := rep.WriteMerged(); err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
		return exitInternal
	}
	rep.Print(stdout)
	if rep.Interrupted {
		fmt.Fprintln(stderr, "locktest: a shard was interrupted: its unfinished runs count as not run")
	}
	return suiteExit(rep)
}
