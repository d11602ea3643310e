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
	"github.com/locktest/locktest/suite"
)

const depsLong = `Installs the servers the named designs need (every design's, given none)
and that this machine lacks: on Debian or Ubuntu with apt-get (as root, or
through sudo); elsewhere it prints what to install, by Debian package
name. It then says, per design, whether it is ready to run. list impls
shows the same without installing. With --suite, the designs are those the
suite file's scenarios run (a CI job installs only what its suite needs).
Exit 0 when every design named is ready, 1 when something is still
missing.`

func depsCommand() *cobra.Command {
	var dryRun bool
	var suiteFile string
	cmd := &cobra.Command{
		Use:     "deps [DESIGN...]",
		Short:   "install only the servers the named designs need",
		Long:    depsLong,
		Example: "  locktest deps redis-single etcd\n  locktest deps --suite suites/quick.yaml\n  locktest deps --dry-run",
		Args:    cobra.ArbitraryArgs,
		RunE: exits(func(cmd *cobra.Command, args []string) int {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if len(args) == 0 && suiteFile == "" {
				args = designNames()
			}
			var designs []impls.Design
			for _, n := range args {
				d, err := impls.Lookup(n)
				if err != nil {
					fmt.Fprintf(stderr, "%s deps: %v\n", prog, err)
					return exitBadArgs
				}
				designs = append(designs, d)
			}
			if suiteFile != "" {
				f, err := suite.Load(suiteFile)
				if err != nil {
					fmt.Fprintf(stderr, "%s deps: %v\n", prog, err)
					return exitBadArgs
				}
				designs = append(designs, suiteDesigns(f)...)
			}
			return deps(designs, dryRun, stdout, stderr)
		}),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return designNames(), cobra.ShellCompDirectiveNoFileComp
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the install command instead of running it")
	cmd.Flags().StringVar(&suiteFile, "suite", "", "also the designs this suite file's scenarios run")
	return cmd
}

// suiteDesigns are the designs a suite's runs use, each once: an exec
// design is its program's, on its servers, under the name it goes by.
func suiteDesigns(f *suite.File) []impls.Design {
	var out []impls.Design
	seen := map[string]bool{}
	for _, sc := range f.Scenarios {
		for _, r := range sc.Runs {
			d := r.Design
			d.Name = runner.DesignName(r.Config)
			key := d.Name + "\x00" + strings.Join(slices.Sorted(maps.Keys(d.Binaries)), "\x00")
			if !seen[key] {
				seen[key] = true
				out = append(out, d)
			}
		}
	}
	return out
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

// deps installs what the designs lack, then reports each one.
func deps(designs []impls.Design, dryRun bool, stdout, stderr io.Writer) int {
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
