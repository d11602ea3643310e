package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/suite"
)

const compareLong = `Compares stored runs as a matrix of designs × faults: verdict, runs unsafe
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
store/compare/<name>/<time>). Exit codes are suite run's.`

func compareCommand() *cobra.Command {
	var out, campaign string
	var latest bool
	var opt suite.Options
	cmd := &cobra.Command{
		Use:   "compare [flags] DIR...",
		Short: "designs × faults matrix of stored runs (HTML, PNG, Markdown, JSON)",
		Long:  compareLong,
		Example: `  locktest compare store
  locktest compare --run suites/compare-seeds.yaml --out DIR`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeDirs,
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "compare", "directory to write compare.html, .png, .md and .json into")
	fs.BoolVar(&latest, "latest", false, "only the newest run of each scenario (default: every run; a cell's figures are medians over its runs)")
	fs.StringVar(&campaign, "run", "", "campaign `file` to run first (a suite file with a matrix and envelopes), then compare what it ran")
	suiteRunFlags(fs, &opt, "with --run: ")
	completeSetting(cmd, "backend")
	if err := cmd.RegisterFlagCompletionFunc("run", completeSuiteFile); err != nil {
		panic(err)
	}
	cmd.RunE = exits(func(cmd *cobra.Command, paths []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if campaign != "" {
			if len(paths) > 0 || latest {
				fmt.Fprintln(stderr, prog+" compare: --run compares what the campaign runs: give no directories and no --latest")
				return exitBadArgs
			}
			// The campaign's own default, not compare's, unless given.
			if fs.Changed("out") {
				opt.Out = out
			}
			return runCampaign(cmd.Context(), campaign, opt, stdout, stderr)
		}
		if len(paths) == 0 {
			fmt.Fprintln(stderr, prog+" compare: give at least one run or store directory, e.g. "+prog+" compare store")
			return exitBadArgs
		}
		m, err := reports.Compare(paths, scenario.ComparedSettings(), latest)
		if err != nil {
			fmt.Fprintf(stderr, "%s compare: %v (give run directories or a store holding runs)\n", prog, err)
			return exitBadArgs
		}
		if err := reports.WriteComparison(out, m); err != nil {
			fmt.Fprintln(stderr, prog+":", err)
			return exitInternal
		}
		m.Markdown(stdout)
		abs, _ := filepath.Abs(filepath.Join(out, reports.CompareHTML))
		// Not on stdout, which may be a CI job summary.
		runs := 0
		for _, c := range m.Cells {
			runs += c.Runs
		}
		fmt.Fprintf(stderr, "%s compare: %d run(s) and %d envelope(s) compared; %s\n", prog, runs, len(m.Envelopes.Sweeps), abs)
		return exitValid
	})
	return cmd
}

// runCampaign runs a campaign file as a suite (every scenario, then every
// sweep), then prints the comparison it wrote: the suite's own output has
// it, since a suite compares its runs.
func runCampaign(ctx context.Context, path string, opt suite.Options, stdout, stderr io.Writer) int {
	f, err := suite.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, prog+":", err)
		return exitBadArgs
	}
	if opt.Out == "" {
		opt.Out = filepath.Join("store", "compare", f.Name, time.Now().Format("20060102T150405"))
	}
	code := runSuite(ctx, path, opt, "", "", stderr, stderr)
	if md, err := os.ReadFile(filepath.Join(opt.Out, reports.CompareMarkdown)); err == nil {
		stdout.Write(md)
		abs, _ := filepath.Abs(filepath.Join(opt.Out, reports.CompareHTML))
		fmt.Fprintf(stderr, "%s compare: %s\n", prog, abs)
	}
	return code
}
