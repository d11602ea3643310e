package cli

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
)

const compareUsage = `usage: locktest compare [flags] <run dir | store dir | suite output dir>...

Compares stored runs as a matrix of designs × faults: verdict, runs unsafe
with the 95% interval of the unsafe rate, lost updates, time to first
violation, acquire p50/p99, throughput, store commands per acquisition, time
from a fault to the next acquisition. A cell holds only runs whose settings
are the same (seed, scenario name and check timeout aside); a fault run with
other settings gets a column of its own, named by the settings that differ,
e.g. "kill-node (persist)". Prints the Markdown (fits a CI job summary) and
writes compare.html, compare.png, compare.md and compare.json into --out.
Starts no server.

flags:
`

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("locktest compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "compare", "directory to write compare.html, .png, .md and .json into")
	latest := fs.Bool("latest", false, "only the newest run of each scenario (default: every run; a cell's figures are medians over its runs)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), compareUsage)
		fs.PrintDefaults()
	}
	// Flags may come before or after the directories.
	var paths []string
	for rest := args; ; {
		if code, ok := parse(fs, rest, stdout, stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		paths, rest = append(paths, fs.Arg(0)), fs.Args()[1:]
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "locktest compare: give at least one run or store directory, e.g. locktest compare store")
		return exitBadArgs
	}
	runs, notes, err := reports.LoadRuns(paths)
	if err != nil {
		fmt.Fprintf(stderr, "locktest compare: %v (give run directories or a store holding runs)\n", err)
		return exitBadArgs
	}
	if *latest {
		runs = reports.Latest(runs)
	}
	m := reports.NewMatrix(runs, runner.ComparedSettings())
	m.Notes = notes
	if err := reports.WriteComparison(*out, m); err != nil {
		fmt.Fprintln(stderr, "locktest:", err)
		return exitInternal
	}
	m.Markdown(stdout)
	abs, _ := filepath.Abs(filepath.Join(*out, reports.CompareHTML))
	// Not on stdout, which may be a CI job summary.
	fmt.Fprintf(stderr, "locktest compare: %d run(s) compared; %s\n", len(runs), abs)
	return exitValid
}
