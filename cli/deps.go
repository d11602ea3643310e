package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/runner"
)

const depsLong = `Installs the servers the named designs need (every design's, given none)
and that this machine lacks: on Debian or Ubuntu with apt-get (as root, or
through sudo); elsewhere it prints what to install, by Debian package
name. It then says, per design, whether it is ready to run. list impls
shows the same without installing. Exit 0 when every design named is
ready, 1 when something is still missing.`

func depsCommand() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:     "deps [DESIGN...]",
		Short:   "install only the servers the named designs need",
		Long:    depsLong,
		Example: "  locktest deps redis-single etcd\n  locktest deps --dry-run",
		Args:    cobra.ArbitraryArgs,
		RunE: exits(func(cmd *cobra.Command, args []string) int {
			return deps(args, dryRun, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return designNames(), cobra.ShellCompDirectiveNoFileComp
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the install command instead of running it")
	return cmd
}

// designNames are the designs deps and list judge: every registered one
// but exec, whose servers are whichever --exec-servers names.
func designNames() []string {
	var names []string
	for _, d := range impls.All() {
		if d.Name != impls.ExecName {
			names = append(names, d.Name)
		}
	}
	return names
}

// deps installs what the designs named lack, then reports each one.
func deps(names []string, dryRun bool, stdout, stderr io.Writer) int {
	if len(names) == 0 {
		names = designNames()
	}
	var designs []impls.Design
	for _, n := range names {
		d, err := impls.Lookup(n)
		if err != nil {
			fmt.Fprintf(stderr, "%s deps: %v\n", prog, err)
			return exitBadArgs
		}
		designs = append(designs, d)
	}
	pkgs := map[string]bool{}
	var order []string
	for _, d := range designs {
		for _, p := range runner.DesignMissing(d).Packages() {
			if !pkgs[p] {
				pkgs[p] = true
				order = append(order, p)
			}
		}
	}
	if len(order) > 0 {
		install := installCommand(order)
		switch {
		case install == nil:
			fmt.Fprintf(stdout, "no apt-get here: install %s (Debian package names) with your package manager\n", strings.Join(order, " "))
		case dryRun:
			fmt.Fprintf(stdout, "would run: %s\n", strings.Join(install[len(install)-1], " "))
		default:
			for _, argv := range install {
				fmt.Fprintf(stderr, "%s deps: %s\n", prog, strings.Join(argv, " "))
				c := exec.Command(argv[0], argv[1:]...)
				c.Stdout, c.Stderr = stderr, stderr
				c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
				if err := c.Run(); err != nil {
					fmt.Fprintf(stderr, "%s deps: %s: %v\n", prog, strings.Join(argv, " "), err)
					return exitInternal
				}
			}
		}
	}
	code := exitValid
	for _, d := range designs {
		state := readiness(runner.DesignMissing(d))
		if state != "ready" {
			code = exitInvalid
		}
		fmt.Fprintf(stdout, "  %-28s %s\n", d.Name, state)
	}
	return code
}

// installCommand is apt-get's update and install of pkgs, through sudo
// unless root; nil without apt-get.
func installCommand(pkgs []string) [][]string {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil
	}
	var sudo []string
	if os.Geteuid() != 0 {
		sudo = []string{"sudo"}
	}
	return [][]string{
		append(sudo, "apt-get", "update", "-qq"),
		append(append(sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends"), pkgs...),
	}
}

// readiness says on one line whether a design can run here, or what it
// lacks and how to get it.
func readiness(m runner.Missing) string {
	if m.Ready() {
		return "ready"
	}
	var lacks []string
	for _, b := range slices.Sorted(maps.Keys(m.Binaries)) {
		if p := m.Binaries[b]; p != "" {
			lacks = append(lacks, fmt.Sprintf("%s (apt-get install %s)", b, p))
		} else {
			lacks = append(lacks, b)
		}
	}
	if m.Check != nil {
		lacks = append(lacks, m.Check.Error())
	}
	return "missing " + strings.Join(lacks, "; ")
}
