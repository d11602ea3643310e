package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/locktest/locktest/explore"
	"github.com/locktest/locktest/runner"
)

func cmdExplore(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	base := runner.Defaults()
	o := explore.Options{Budget: 5 * time.Minute, ShrinkBudget: 5 * time.Minute, ShrinkSeeds: 5, Seed: 1, Progress: stdout}
	budget, shrinkBudget := runner.Duration(o.Budget), runner.Duration(o.ShrinkBudget)
	base.Faults = nil // none given: every fault that applies
	fs := flag.NewFlagSet("locktest explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The design and what frames the search are run's own settings; the
	// knobs the search turns (clients, holds, fault lengths…) are not
	// flags here.
	bindSettings(fs, &base, map[string]string{
		"fault": "faults to search, or all (default: every fault that applies to the design)",
	}, "impl", "exec-cmd", "exec-servers", "workload", "fault", "ttl", "backend", "store")
	fs.Var(&budget, "budget", "how long to search before reporting coverage")
	fs.Var(&shrinkBudget, "shrink-budget", "how long to shrink a violation once found")
	fs.IntVar(&o.ShrinkSeeds, "shrink-seeds", o.ShrinkSeeds, "seeds that judge each shrink step (kept if all but one fail)")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the search: the same seed tries the same scenarios")
	fs.StringVar(&o.Out, "out", "", "directory of the exploration (default: STORE/explore/IMPL/TIME)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: locktest explore --impl NAME [flags]

Searches for an anomaly with no tuning: it draws fault lengths, critical
sections and timeouts as ratios to the TTL, aligns strikes to lock moments
(grant, near-expiry, acquire, release), steers toward strikes that took
effect, and stops at the first lost update. It then shrinks the scenario and
writes a capsule (a suite file that replays it). Exits 1 when it found a
violation, 0 when the budget ran out with none (and prints its coverage: not
a proof of safety), 130 when interrupted, 254 for bad arguments.

flags:`)
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if !needImpl(fs, base, stderr) {
		return exitBadArgs
	}
	switch {
	case budget <= 0 || shrinkBudget < 0:
		fmt.Fprintln(stderr, "locktest explore: --budget must be positive and --shrink-budget not negative")
		return exitBadArgs
	case o.ShrinkSeeds < 1 || o.ShrinkSeeds > 20:
		fmt.Fprintln(stderr, "locktest explore: --shrink-seeds must be between 1 and 20")
		return exitBadArgs
	}
	faultList := base.Faults
	if len(faultList) == 1 && faultList[0] == "all" {
		faultList = nil
	}
	o.Base, o.Faults = base, faultList
	o.Budget, o.ShrinkBudget = time.Duration(budget), time.Duration(shrinkBudget)
	if o.Out == "" {
		o.Out = filepath.Join(base.Store, "explore", base.Impl, time.Now().Format("20060102T150405"))
	}
	rep, err := explore.Explore(ctx, o)
	if err != nil {
		return exitCode(err, stderr)
	}
	explore.Print(stdout, rep)
	switch {
	case rep.Interrupted:
		fmt.Fprintln(stderr, "locktest: interrupted; every process was stopped")
		return exitInterrupted
	case rep.Found != nil:
		return exitInvalid
	}
	return exitValid
}
