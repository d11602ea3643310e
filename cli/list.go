package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/workloads"
)

// lists are what list shows one of.
var lists = []string{"impls", "workloads", "faults"}

func listCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list [impls|workloads|faults]",
		Short: "what can be run, one line each",
		Long:  "Lists the registered designs (impls), each with whether it is ready to run here or what it lacks (deps installs it), workloads and faults, one line each, or all three.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return errors.New("give at most one of impls, workloads, faults")
			}
			return nil
		},
		ValidArgs: lists,
		RunE: exits(func(cmd *cobra.Command, args []string) int {
			what := "all"
			if len(args) == 1 {
				what = args[0]
			}
			return list(what, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
}

// list prints the list named what, or all of them.
func list(what string, stdout, stderr io.Writer) int {
	show := func(title string, rows [][2]string) {
		fmt.Fprintln(stdout, title)
		width := 22 // at least, so that short lists line up with long ones
		for _, r := range rows {
			width = max(width, len(r[0]))
		}
		for _, r := range rows {
			fmt.Fprintf(stdout, "  %-*s %s\n", width, r[0], r[1])
		}
	}
	var designs, wls, fs [][2]string
	for _, d := range impls.All() {
		desc := d.Description
		if d.Version != nil {
			desc += " [" + d.Version() + "]"
		}
		if d.Name != impls.ExecName { // whose servers --exec-servers names
			desc += "; " + readiness(runner.DesignMissing(d))
		}
		designs = append(designs, [2]string{d.Name, desc})
	}
	for _, w := range workloads.All() {
		wls = append(wls, [2]string{w.Name, w.Description})
	}
	for _, f := range faults.All() {
		desc := f.Description()
		if t := faults.TargetHelp(f); t != "" {
			desc += "; " + t
		}
		fs = append(fs, [2]string{f.Name(), desc})
	}
	switch what {
	case "impls":
		show("impls:", designs)
	case "workloads":
		show("workloads:", wls)
	case "faults":
		show("faults:", fs)
	case "all":
		show("impls:", designs)
		show("workloads:", wls)
		show("faults:", fs)
	default:
		fmt.Fprintf(stderr, "%s list: unknown list %q (valid: impls, workloads, faults)\n", prog, what)
		return exitBadArgs
	}
	return exitValid
}
