package envelope

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/locktest/locktest/runner"
)

// Result is the outcome in one line, as
// "safe ≤ 1×TTL (0/3 seeds), unsafe ≥ 1.06×TTL (3/3 seeds)".
func (rep *Report) Result() string {
	o, p := rep.Outcome, rep.Plan
	at := func(m *float64) string {
		pt, _ := rep.point(*m)
		return fmt.Sprintf("%s (%d/%d seeds lost an update)", p.Label(*m), pt.Unsafe, len(pt.Runs))
	}
	switch o.Finding {
	case FoundBoundary:
		s := "safe ≤ " + at(o.Safe) + ", unsafe ≥ " + at(o.Unsafe)
		if !o.Converged {
			s += fmt.Sprintf("; the point budget ran out before the bracket was within ±%s", p.halfTol())
		}
		return s
	case FoundNone:
		return "no boundary up to " + p.Label(p.Hi) + ": " + at(o.Safe)
	case FoundBelow:
		return "unsafe already at " + at(o.Unsafe) + ": the boundary lies below the bracket"
	}
	s := "unknown: a point gave no answer (unknown verdict, harness error or no strike)"
	if rep.Interrupted {
		s = "interrupted"
	}
	if o.Safe != nil && o.Unsafe != nil {
		s += "; known so far: safe ≤ " + p.Label(*o.Safe) + ", unsafe ≥ " + p.Label(*o.Unsafe)
	}
	return s
}

// halfTol is the precision of a converged bracket, as "5% of TTL".
func (p Plan) halfTol() string {
	if p.Unit == "rate" {
		return trim(p.Tol / 2)
	}
	return trim(p.Tol/2*100) + "% of TTL"
}

// Print writes the one-screen summary of a sweep.
func Print(w io.Writer, rep *Report) {
	p := rep.Plan
	fmt.Fprintf(w, "envelope  %s under %s: vary %s, the %s\n", rep.Impl, p.Fault, p.Vary, p.Knob)
	target := p.Target
	if target == "" {
		target = "what the fault hits"
	}
	fmt.Fprintf(w, "settings  TTL %s, %d clients, workload %s, seeds %s; strikes at moment %s on %s;\n",
		rep.TTL, rep.Clients, rep.Workload, seedRange(rep.Seeds), p.Moment, target)
	fmt.Fprintf(w, "          critical section %s–%s×TTL", trim(p.HoldMin), trim(p.HoldMax))
	if p.LockDelay > 0 {
		fmt.Fprintf(w, ", lock-delay %s×TTL", trim(p.LockDelay))
	}
	fmt.Fprintf(w, "; runs of at least %s\n          (%s)\n", p.MinDuration, p.Why)
	timeouts := runner.ServerDefault
	if len(rep.ServerTimeouts) > 0 {
		timeouts = strings.Join(rep.ServerTimeouts, ", ")
	}
	fmt.Fprintf(w, "timeouts  servers: %s\n", timeouts)
	for i, pt := range rep.Sorted() {
		head := "          "
		if i == 0 {
			head = "points    "
		}
		bar := strings.Repeat("#", pt.Unsafe) + strings.Repeat(".", len(pt.Runs)-pt.Unsafe)
		fmt.Fprintf(w, "%s%-12s %-8s %d/%d lost an update  %s", head, p.Label(pt.Magnitude), pt.State, pt.Unsafe, len(pt.Runs), bar)
		if pt.Unfair > 0 {
			fmt.Fprintf(w, "  (%d gave no answer)", pt.Unfair)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "result    %s\n", rep.Result())
	fmt.Fprintf(w, "runs      %d runs, %d points in %s\n", rep.Runs, len(rep.Points), time.Duration(rep.Elapsed*float64(time.Second)).Round(time.Second))
	fmt.Fprintf(w, "files     %s/{%s,%s,%s}, runs in %s/runs\n", rep.Dir, JSONFile, PNGFile, SVGFile, rep.Dir)
}

// seedRange formats consecutive seeds as "1–3".
func seedRange(seeds []int64) string {
	if len(seeds) == 1 {
		return fmt.Sprint(seeds[0])
	}
	return fmt.Sprintf("%d–%d", seeds[0], seeds[len(seeds)-1])
}
