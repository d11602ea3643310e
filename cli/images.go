package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/locktest/locktest/cluster/container"
)

const imagesUsage = `usage: locktest images build [IMAGE...]

Builds the container images of --backend docker on this machine, FROM
scratch, out of the installed server binaries and their shared libraries
(no registry, no base image): %v.
`

// cmdImages builds the images --backend docker runs.
func cmdImages(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var names []string
	for _, img := range container.Images() {
		names = append(names, img.Ref())
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(stdout, imagesUsage, names)
		return exitValid
	}
	if len(args) == 0 || args[0] != "build" {
		fmt.Fprintf(stderr, "locktest images: give a subcommand: build (see locktest images --help)\n")
		return exitBadArgs
	}
	if err := container.BuildImages(ctx, args[1:], stdout); err != nil {
		fmt.Fprintln(stderr, "locktest images build:", err)
		if ctx.Err() != nil {
			return exitInterrupted
		}
		return exitInternal
	}
	return exitValid
}

// cmdWatchdog is the hidden process that removes a docker run's
// containers once its coordinator has gone (container.Watchdog).
func cmdWatchdog(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "locktest", container.WatchdogCommand+": give the run id")
		return exitBadArgs
	}
	if err := container.Watchdog(args[0], os.Stdin); err != nil {
		fmt.Fprintln(stderr, "locktest", container.WatchdogCommand+":", err)
		return exitInternal
	}
	return exitValid
}
