package cli

import (
	"fmt"
	"io"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/workloads"
)

func cmdList(args []string, stdout, stderr io.Writer) int {
	what := "all"
	if len(args) > 1 {
		fmt.Fprintln(stderr, "locktest list: give at most one of impls, workloads, faults")
		return exitBadArgs
	}
	if len(args) == 1 {
		what = args[0]
	}
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
	case "-h", "--help":
		fmt.Fprintln(stdout, "usage: locktest list [impls|workloads|faults]")
	default:
		fmt.Fprintf(stderr, "locktest list: unknown list %q (valid: impls, workloads, faults)\n", what)
		return exitBadArgs
	}
	return exitValid
}
