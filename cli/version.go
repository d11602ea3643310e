package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
)

const versionLong = `Prints this binary's module version, the git revision it was built from (and
whether the checkout had uncommitted changes), its Go version, and the
version of each server the registered designs run on, as installed here.
results.json records the same, per run.`

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "this binary's version and revision, and the installed servers'",
		Long:  versionLong,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("takes no arguments (got %q)", args[0])
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		Run:               func(cmd *cobra.Command, _ []string) { printVersion(cmd.OutOrStdout()) },
	}
}

// printVersion prints the build and the servers' versions.
func printVersion(stdout io.Writer) {
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
}
