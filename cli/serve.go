package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/serve"
)

const serveLong = `Serves the store (default: store) as a web site: an index of the runs with
their verdicts and lost updates, each run's files (report.html, plots,
results.json, history), the designs × faults comparison of the checked runs
(rendered on request; nothing is written), and a page that follows a run
in progress, reloading every 2 s until its verdict is in. A run's page,
in progress or checked, plots its figures over time from its samples: lost
updates, fault strikes begun and hit, memory, and each server's sessions.
Listens on
127.0.0.1 only unless --addr says otherwise; on a loopback address it
answers only requests addressed to it (or to localhost on its port), so
that no other web site can reach the store through a browser. Ctrl-C
stops it (exit 130).`

func serveCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:               "serve [STORE] [flags]",
		Short:             "browse the store: runs, verdicts, reports, the comparison, runs in progress",
		Long:              serveLong,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeDirs,
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on; 127.0.0.1 keeps the store to this machine")
	cmd.RunE = exits(func(cmd *cobra.Command, paths []string) int {
		return serveStore(cmd.Context(), paths, addr, cmd.ErrOrStderr())
	})
	return cmd
}

// serveStore serves the store paths names (default: store) on addr until
// ctx ends.
func serveStore(ctx context.Context, paths []string, addr string, stderr io.Writer) int {
	store := "store"
	switch len(paths) {
	case 0:
	case 1:
		store = paths[0]
	default:
		fmt.Fprintf(stderr, "%s serve: give one store directory, not %d\n", prog, len(paths))
		return exitBadArgs
	}
	srv, err := serve.New(store)
	if err != nil {
		fmt.Fprintf(stderr, "%s serve: %v (give the directory runs are stored in)\n", prog, err)
		return exitBadArgs
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "%s serve: --addr: %v\n", prog, err)
		return exitBadArgs
	}
	srv.Bind(ln.Addr())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	// Not on stdout: scripts read the address from here as from a log.
	fmt.Fprintf(stderr, "%s serve: %s on http://%s/ (Ctrl-C to stop)\n", prog, store, ln.Addr())
	select {
	case err := <-served:
		fmt.Fprintln(stderr, prog+" serve:", err)
		return exitInternal
	case <-ctx.Done():
	}
	// In-flight requests get a moment to finish; then every connection
	// is closed, so nothing outlives the command.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintln(stderr, prog+" serve:", err)
	}
	hs.Close()
	<-served
	return exitInterrupted
}
