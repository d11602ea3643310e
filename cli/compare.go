package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/suite"
)

const compareUsage = `usage: locktest compare [flags] <run dir | store dir | suite output dir>...
       locktest compare --run <campaign file> [--out DIR] [--parallel N] [--seeds N] [--backend B]

Compares stored runs as a matrix of designs × faults: verdict, runs unsafe
with the 95% interval of the unsafe rate, lost updates, time to first
violation, acquire p50/p99, throughput, store commands per acquisition, time
from a fault to the next acquisition. A cell holds only runs whose settings
are the same (seed, scenario name and check timeout aside); a fault run with
other settings gets a column of its own, named by the settings that differ,
e.g. "kill-node (persist)". Prints the Markdown (fits a CI job summary) and
writes compare.html, compare.png, compare.md and compare.json into --out.
Starts no server.

Sweeps of locktest envelope (directories holding envelope.json) found under
the paths are the comparison's headline: for each design and fault swept,
the largest fault it survived, and every curve on one chart
(envelopes.png).

With --run, runs a campaign first: a suite file (suites/compare-seeds.yaml)
whose matrix runs every design under every fault with the same settings and
seeds, and whose envelopes block sweeps each design's boundary under the
same settings; then compares what it ran (default --out
store/compare/<name>/<time>). Exit codes are suite run's.

flags:
`

func cmdCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("locktest compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "compare", "directory to write compare.html, .png, .md and .json into")
	latest := fs.Bool("latest", false, "only the newest run of each scenario (default: every run; a cell's figures are medians over its runs)")
	campaign := fs.String("run", "", "campaign file to run first (a suite file with a matrix and envelopes), then compare what it ran")
	var opt suite.Options
	fs.IntVar(&opt.Parallel, "parallel", suite.DefaultParallel(), "with --run: runs (and sweeps) at once")
	fs.IntVar(&opt.Seeds, "seeds", 0, "with --run: run every scenario with seeds 1..N instead of its own")
	fs.StringVar(&opt.Backend, "backend", "", "with --run: servers as local processes or docker containers")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), compareUsage)
		fs.PrintDefaults()
	}
	paths, code, ok := parsePositional(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if *campaign != "" {
		if len(paths) > 0 || *latest {
			fmt.Fprintln(stderr, "locktest compare: --run compares what the campaign runs: give no directories and no --latest")
			return exitBadArgs
		}
		opt.Out = ""
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "out" {
				opt.Out = *out
			}
		})
		return runCampaign(ctx, *campaign, opt, stdout, stderr)
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "locktest compare: give at least one run or store directory, e.g. locktest compare store")
		return exitBadArgs
	}
	m, err := reports.Compare(paths, runner.ComparedSettings(), *latest)
	if err != nil {
		fmt.Fprintf(stderr, "locktest compare: %v (give run directories or a store holding runs)\n", err)
		return exitBadArgs
	}
	if err := reports.WriteComparison(*out, m); err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
		return exitInternal
	}
	m.Markdown(stdout)
	abs, _ := filepath.Abs(filepath.Join(*out, reports.CompareHTML))
	// Not on stdout, which may be a CI job summary.
	runs := 0
	for _, c := range m.Cells {
		runs += c.Runs
	}
	fmt.Fprintf(stderr, "locktest compare: %d run(s) and %d envelope(s) compared; %s\n", runs, len(m.Envelopes.Sweeps), abs)
	return exitValid
}

// runCampaign runs a campaign file as a suite (every scenario, then every
// sweep), then prints the comparison it wrote: the suite's own output has
// it, since a suite compares its runs.
func runCampaign(ctx context.Context, path string, opt suite.Options, stdout, stderr io.Writer) int {
	f, err := suite.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
		return exitBadArgs
	}
	if opt.Out == "" {
		opt.Out = filepath.Join("store", "compare", f.Name, time.Now().Format("20060102T150405"))
	}
	args := []string{path, "--out", opt.Out, "--parallel", strconv.Itoa(opt.Parallel), "--seeds", strconv.Itoa(opt.Seeds)}
	if opt.Backend != "" {
		args = append(args, "--backend", opt.Backend)
	}
	code := cmdSuiteRun(ctx, args, stderr, stderr)
	if md, err := os.ReadFile(filepath.Join(opt.Out, reports.CompareMarkdown)); err == nil {
		stdout.Write(md)
		abs, _ := filepath.Abs(filepath.Join(opt.Out, reports.CompareHTML))
		fmt.Fprintf(stderr, "locktest compare: %s\n", abs)
	}
	return code
}
