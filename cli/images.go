package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/cluster/container"
)

func imagesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images COMMAND",
		Short: "build the images of --backend docker from this machine's binaries",
		Args:  cobra.ArbitraryArgs,
		RunE:  unknownCommand,
	}
	var names []string
	for _, img := range container.Images() {
		names = append(names, img.Ref())
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "build [IMAGE...]",
		Short: "build the container images of --backend docker",
		Long: fmt.Sprintf(`Builds the container images of --backend docker on this machine, FROM
scratch, out of the installed server binaries and their shared libraries
(no registry, no base image): %s.`, strings.Join(names, ", ")),
		Args:      cobra.ArbitraryArgs,
		ValidArgs: names,
		RunE: exits(func(cmd *cobra.Command, args []string) int {
			ctx := cmd.Context()
			if err := container.BuildImages(ctx, args, cmd.OutOrStdout()); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), prog+" images build:", err)
				if ctx.Err() != nil {
					return exitInterrupted
				}
				return exitInternal
			}
			return exitValid
		}),
	})
	return cmd
}

// cmdWatchdog is the hidden process that removes a docker run's
// containers once its coordinator has gone (container.Watchdog).
func cmdWatchdog(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, prog, container.WatchdogCommand+": give the run id")
		return exitBadArgs
	}
	if err := container.Watchdog(args[0], os.Stdin); err != nil {
		fmt.Fprintln(stderr, prog, container.WatchdogCommand+":", err)
		return exitInternal
	}
	return exitValid
}
