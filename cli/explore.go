package cli

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/explore"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

func exploreCommand() *cobra.Command {
	base := scenario.Defaults()
	o := explore.Options{ShrinkSeeds: 5, Seed: 1}
	budget, shrinkBudget := scenario.Duration(5*time.Minute), scenario.Duration(5*time.Minute)
	base.Faults = nil // none given: every fault that applies
	cmd := &cobra.Command{
		Use:   "explore --impl NAME [flags]",
		Short: "search for an anomaly with no tuning, shrink it, or report coverage",
		Long: `Searches for an anomaly with no tuning: it draws fault lengths, critical
sections and timeouts as ratios to the TTL, aligns strikes to lock moments
(grant, near-expiry, acquire, release), steers toward strikes that took
effect. Every trial that loses updates is run again without its fault and
classed: no fault needed or inside the lease (a bug of the lock: the search
stops there), or beyond it (what every unfenced lease lock allows: the search
goes on for the rest of its budget, looking inside the lease). A quarter of
the fresh draws of a fault pair it with another that strikes together with
it (a+b, each with its own length). It then shrinks the scenario (a pair to either fault alone, when
that still fails) and writes a capsule (a suite file that replays it). Exits
1 when it found a violation, 0 when the budget ran out with none (and prints
its coverage: not a proof of safety), 2 when not one trial could be judged,
130 when interrupted, 254 for bad arguments.`,
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().SortFlags = false // run's settings first, in run's order
	// The design and what frames the search are run's own settings; the
	// knobs the search turns (clients, holds, fault lengths…) are not
	// flags here.
	bindSettings(cmd, &base, map[string]string{
		"fault":   "faults to search, or all (default: every fault that applies to the design)",
		"fencing": "keep the resource's fencing at reads-writes or writes (default: each trial draws one, when the design hands the resource tokens)",
	}, "impl", "exec-cmd", "exec-servers", "exec-name", "exec-checkpoints", "workload", "fencing", "fault", "ttl", "persist", "backend", "network", "store")
	fs := cmd.Flags()
	// Unset, the search draws the fencing: run's default is none here.
	fs.Lookup("fencing").DefValue = ""
	fs.Var(&budget, "budget", "how long to search before reporting coverage")
	fs.Var(&shrinkBudget, "shrink-budget", "how long to shrink a violation once found")
	fs.IntVar(&o.ShrinkSeeds, "shrink-seeds", o.ShrinkSeeds, "seeds that judge each shrink step (kept if all but one fail)")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the search: the same seed tries the same scenarios")
	fs.StringVar(&o.Out, "out", "", "directory of the exploration (default: STORE/explore/IMPL/TIME)")
	cmd.RunE = exits(func(cmd *cobra.Command, _ []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if !needImpl(cmd, base) {
			return exitBadArgs
		}
		switch {
		case budget <= 0 || shrinkBudget < 0:
			fmt.Fprintln(stderr, prog+" explore: --budget must be positive and --shrink-budget not negative")
			return exitBadArgs
		case o.ShrinkSeeds < 1 || o.ShrinkSeeds > 20:
			fmt.Fprintln(stderr, prog+" explore: --shrink-seeds must be between 1 and 20")
			return exitBadArgs
		}
		if runner.Network(base) == runner.NetworkNetns && !cluster.InLab() {
			return rerunInLab(stderr) // every trial's lab lives in it
		}
		faultList := base.Faults
		if len(faultList) == 1 && faultList[0] == "all" {
			faultList = nil
		}
		o.Base, o.Faults, o.Progress = base, faultList, stdout
		o.KeepFencing = cmd.Flags().Changed("fencing")
		o.Budget, o.ShrinkBudget = time.Duration(budget), time.Duration(shrinkBudget)
		if o.Out == "" {
			o.Out = filepath.Join(base.Store, "explore", base.Impl, time.Now().Format("20060102T150405"))
		}
		rep, err := explore.Explore(cmd.Context(), o)
		if err != nil {
			return exitCode(err, stderr)
		}
		explore.Print(stdout, rep)
		switch {
		case rep.Interrupted:
			fmt.Fprintln(stderr, prog+": interrupted; every process was stopped")
			return exitInterrupted
		case rep.Found != nil:
			return exitInvalid
		case rep.Unknown():
			return exitUnknown
		}
		return exitValid
	})
	return cmd
}
