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

const versionLong = `Prints this binary's module (and version, for a release), the git revision it
was built from, that commit's time (and whether the checkout had
uncommitted changes), its Go version, and the version of each server the
registered designs run on, as installed here. locktest --version prints
the same. results.json records the build, per run.`

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
	writeBuild(stdout, reports.CurrentBuild())
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

// writeBuild prints what identifies a build: its module (and version, when
// it is a release rather than "(devel)"), and the git revision and commit
// time the go command stamped into it, or why there are none.
func writeBuild(w io.Writer, b reports.Build) {
	module := b.Module
	if b.Version != "" && b.Version != "(devel)" {
		module += " " + b.Version
	}
	fmt.Fprintf(w, "locktest  %s\n", module)
	if b.Revision == "" {
		fmt.Fprintln(w, "revision  unknown: built without VCS information (build inside a git clone, without -buildvcs=false)")
	} else {
		modified := ""
		if b.Modified {
			modified = " (modified: the checkout had uncommitted changes)"
		}
		fmt.Fprintf(w, "revision  %s%s\n", b.Revision, modified)
		fmt.Fprintf(w, "time      %s\n", b.Time)
	}
	fmt.Fprintf(w, "go        %s\n", b.Go)
}
