package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/envelope"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

func envelopeCommand() *cobra.Command {
	base := scenario.Defaults()
	// A point's run only needs one strike and its aftermath; longer faults
	// get longer runs (envelope.Plan.Config).
	base.Duration = scenario.Duration(6 * time.Second)
	base.Faults = nil
	o := envelope.Options{Seeds: 5, MaxPoints: 8}
	var vary string
	cmd := &cobra.Command{
		Use:   "envelope --impl NAME --fault F [flags]",
		Short: "how big a fault the design survives: bisect the fault's magnitude",
		Long: `Finds how big a fault the design survives: the magnitude (a pause, a delay or
a clock jump in multiples of the TTL, or a clock rate) at which the protected
data first loses an update. It judges 0.25×TTL and 4×TTL, then bisects until
the bracket is within ±5% of the TTL, each point on N seeds, every strike
placed just after a client entered its critical section. It prints
"safe ≤ a×TTL, unsafe ≥ b×TTL" or "no boundary up to 4×TTL" and writes the
curve (envelope.json, envelope.png, envelope.svg). Exits 0 when it found a
boundary or none, 2 when a point gave no answer, 130 when interrupted, 254
for bad arguments.`,
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().SortFlags = false // run's settings first, in run's order
	// The design and what frames the sweep are run's own settings; the
	// knobs the sweep sets per point (fault length, holds, timeouts,
	// moment, target) are not flags here.
	help := map[string]string{
		"fault":    "the fault to sweep, one (locktest list faults)",
		"seed":     "first seed: each point runs seeds seed … seed+N−1",
		"duration": "shortest run of a point; a longer fault gets a run long enough for a whole strike",
	}
	bindSettings(cmd, &base, help, "impl", "exec-cmd", "exec-servers", "exec-name", "exec-checkpoints", "workload", "fault", "ttl", "clients", "seed", "duration", "backend", "network", "store",
		"server-keepalive", "server-user-timeout", "server-idle-timeout", "server-io-timeout")
	varies := make([]string, len(faults.Varies))
	for i, v := range faults.Varies {
		varies[i] = string(v)
	}
	fs := cmd.Flags()
	fs.StringVar(&vary, "vary", "", "magnitude to sweep: "+strings.Join(varies, ", ")+" (default: the fault's)")
	fs.IntVar(&o.Seeds, "seeds", o.Seeds, "seeds that judge each point: unsafe when one loses an update")
	fs.IntVar(&o.MaxPoints, "points", o.MaxPoints, "most points to judge, both ends of the bracket included")
	fs.StringVar(&o.Out, "out", "", "directory of the sweep (default: STORE/envelope/IMPL-FAULT/TIME)")
	if err := cmd.RegisterFlagCompletionFunc("vary", completeNames(func() []cobra.Completion { return varies })); err != nil {
		panic(err)
	}
	cmd.RunE = exits(func(cmd *cobra.Command, _ []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if !needImpl(cmd, base) {
			return exitBadArgs
		}
		if len(base.Faults) != 1 {
			fmt.Fprintln(stderr, prog+" envelope: give exactly one --fault to sweep (sweepable: "+strings.Join(envelope.SweepableFaults(), ", ")+")")
			return exitBadArgs
		}
		if runner.Network(base) == runner.NetworkNetns && !cluster.InLab() {
			return rerunInLab(stderr) // every point's lab lives in it
		}
		o.Base, o.Fault, o.Vary, o.Progress = base, base.Faults[0], faults.Vary(vary), stdout
		if o.Out == "" {
			o.Out = filepath.Join(base.Store, "envelope", base.Impl+"-"+o.Fault, time.Now().Format("20060102T150405"))
		}
		rep, err := envelope.Sweep(cmd.Context(), o)
		if err != nil {
			return exitCode(err, stderr)
		}
		fmt.Fprintln(stdout)
		envelope.Print(stdout, rep)
		switch {
		case rep.Interrupted:
			fmt.Fprintln(stderr, prog+": interrupted; every process was stopped")
			return exitInterrupted
		case rep.Outcome.Finding == envelope.FoundUnknown:
			return exitUnknown
		}
		return exitValid
	})
	return cmd
}
