package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
)

const versionUsage = `usage: locktest version

Prints this binary's module version, the git revision it was built from (and
whether the checkout had uncommitted changes), its Go version, and the
version of each server the registered designs run on, as installed here.
results.json records the same, per run.
`

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, versionUsage)
		return exitValid
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "locktest version: takes no arguments (got %q)\n", args[0])
		return exitBadArgs
	}
	b := reports.CurrentBuild()
	fmt.Fprintf(stdout, "locktest  %s %s\n", b.Module, b.Version)
	if b.Revision != "" {
		modified := ""
		if b.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(stdout, "revision  %s%s\n", b.Revision, modified)
	}
	fmt.Fprintf(stdout, "go        %s\n", b.Go)
	bins := map[string]bool{"redis-server": true} // the protected resource of unguarded designs
	for _, d := range impls.All() {
		for b := range d.Binaries {
			bins[b] = true
		}
	}
	servers := cluster.ServerVersions(slices.Collect(maps.Keys(bins)))
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		fmt.Fprintf(stdout, "server    %s %s\n", name, servers[name])
	}
	return exitValid
}
