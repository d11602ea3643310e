package reports

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/workloads"
)

// Summary prints the one-screen account of a run: verdicts, counts, lost
// updates, and the violating ops with the fault active at the time.
func Summary(w io.Writer, r Results) {
	m, c := r.Metrics, r.Checks
	ms := func(t int64) string { return checker.Seconds(t, c.Start) }
	network := ""
	if r.Network != "" {
		network = ", network " + r.Network
	}
	fmt.Fprintf(w, "scenario  %s  (seed %d, %d clients%s)\n", r.Scenario, r.Seed, r.Clients, network)
	fmt.Fprintf(w, "ops       acquire ok %d / fail %d / info %d   release ok %d / fail %d / info %d",
		m.Acquires.OK, m.Acquires.Fail, m.Acquires.Info, m.Releases.OK, m.Releases.Fail, m.Releases.Info)
	if r := m.Renewals; r != (checker.Outcomes{}) {
		fmt.Fprintf(w, "   renew ok %d / fail %d / info %d", r.OK, r.Fail, r.Info)
	}
	fmt.Fprintln(w)
	if r.DecidedBy == checker.ResourceCheck || c.Resource.Ops > 0 {
		final := "unknown"
		if c.Stats.Final != nil {
			final = fmt.Sprint(*c.Stats.Final)
		}
		fencing := ""
		if r.Fencing != "" {
			fencing = "; tokens checked on " + r.Fencing
		}
		fmt.Fprintf(w, "resource  %d increments acknowledged, final value %s, %d lost, %d stale writes rejected, %d unknown%s\n",
			c.Stats.Acknowledged, final, c.Stats.Lost, c.Stats.Rejected, c.Stats.Indeterminate, fencing)
	}
	fmt.Fprintf(w, "latency   acquire p50 %.1f ms, p99 %.1f ms; %.1f acquisitions/s; %s store commands per acquisition\n",
		m.AcquireP50Ms, m.AcquireP99Ms, m.Throughput, orDash(m.CommandsPerAcquisition))
	if len(c.Faults) > 0 {
		var fs []string
		for _, f := range c.Faults {
			fs = append(fs, fmt.Sprintf("%s on %s at %s for %.0f ms", f.Name, f.Target, ms(f.Start), float64(f.Stop-f.Start)/1e6))
		}
		fmt.Fprintf(w, "faults    %d: %s\n", len(fs), strings.Join(limit(fs, 4), "; "))
	}
	if len(m.Recoveries) > 0 {
		var rs []string
		for _, rec := range m.Recoveries {
			rs = append(rs, fmt.Sprintf("%s on %s %s", rec.Fault, rec.Target, recoveryText(rec)))
		}
		fmt.Fprintf(w, "recovery  next acquire by another client after each fault began: %s\n", strings.Join(limit(rs, 4), "; "))
	}
	efficacy(w, c.Efficacy, ms)
	for _, res := range []checker.Result{c.Mutex, c.Resource} {
		if res.Ops == 0 {
			continue
		}
		first := ""
		if res.FirstViolationS != nil {
			first = fmt.Sprintf(", first violation at %.3fs", *res.FirstViolationS)
		}
		fmt.Fprintf(w, "check     %-8s %-8s (%d ops%s)%s\n", res.Check, strings.ToUpper(string(res.Verdict)), res.Ops, first, note(res.Note))
		for i, v := range res.Violations {
			if i == 2 {
				fmt.Fprintf(w, "          … %d more in %s\n", len(res.Violations)-2, ResultsFile)
				break
			}
			fmt.Fprintf(w, "          - %s\n", v.Summary)
			for j, op := range v.Ops {
				if j == 3 && len(v.Ops) > 4 {
					fmt.Fprintf(w, "              … %d more ops\n", len(v.Ops)-3)
					break
				}
				val := ""
				if op.Value != nil {
					val = fmt.Sprintf(" value=%d", *op.Value)
				}
				if op.Token != 0 {
					val += fmt.Sprintf(" token=%d", op.Token)
				}
				ret := "∞"
				if op.Return != history.Never {
					ret = ms(op.Return)
				}
				fmt.Fprintf(w, "              op #%d c%d %s %s [%s → %s]%s\n", op.Index, op.Process, op.F, op.Outcome, ms(op.Call), ret, val)
			}
			if len(v.Faults) > 0 {
				fmt.Fprintf(w, "              fault active: %s\n", strings.Join(v.Faults, ", "))
			}
		}
	}
	if len(r.Timeouts) > 0 {
		fmt.Fprintf(w, "timeouts  %s\n", r.TimeoutsText())
	}
	if l := c.Lease; l != nil {
		fmt.Fprintf(w, "lease     %s: %s\n", LeaseClassText(l.Class), l.Why)
		if n := FencingNote(l.Class, r.Fencing); n != "" {
			fmt.Fprintf(w, "          %s\n", n)
		}
	}
	if r.Health != nil {
		fmt.Fprintf(w, "health    %s\n", r.Health.line())
	}
	if res := r.Resources; res != nil {
		if len(res.Procs) > 0 {
			fmt.Fprintf(w, "memory    %s\n", res.Line())
		}
		for _, u := range res.Unsampled {
			fmt.Fprintf(w, "          not sampled: %s\n", u)
		}
		for _, l := range res.Leaks {
			fmt.Fprintf(w, "leak      %s\n", l)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note      %s\n", n)
	}
	verdict := strings.ToUpper(string(r.Verdict))
	if r.Unexercised() {
		verdict += " (but no fault took effect)"
	}
	fmt.Fprintf(w, "verdict   %s  (the %s check decides for workload %s)\n", verdict, r.DecidedBy, r.Workload)
	fmt.Fprintf(w, "run dir   %s\n", r.Dir)
	// A check with --no-report of a run that never wrote one has none.
	if report := filepath.Join(r.Dir, ReportFile); fileExists(report) {
		fmt.Fprintf(w, "report    %s\n", report)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Unexercised: the run is valid, and had faults, none of which took
// effect: the verdict says the lock held up under conditions the run never
// created, which a reader of the verdict alone must be told.
func (r Results) Unexercised() bool {
	if r.Verdict != checker.Valid || len(r.Checks.Efficacy) == 0 {
		return false
	}
	for _, e := range r.Checks.Efficacy {
		if e.Kind == checker.Effective {
			return false
		}
	}
	return true
}

// efficacy prints whether each fault took effect: a valid verdict after
// faults that changed nothing says little about the lock.
func efficacy(w io.Writer, es []checker.FaultEffect, ms func(int64) string) {
	if len(es) == 0 {
		return
	}
	count := map[checker.EffectKind]int{}
	for _, e := range es {
		count[e.Kind]++
	}
	fmt.Fprintf(w, "efficacy  %d of %d fault(s) took effect, %d disturbed the clients only, %d had no effect\n",
		count[checker.Effective], len(es), count[checker.Disturbed], count[checker.NoEffect])
	for i, e := range es {
		if i == maxEffectLines && len(es) > maxEffectLines+1 {
			fmt.Fprintf(w, "          … %d more in %s\n", len(es)-i, ResultsFile)
			break
		}
		fmt.Fprintf(w, "          - %s on %s at %s: %s: %s\n", e.Fault, e.Target, ms(e.Start), strings.ReplaceAll(string(e.Kind), "-", " "), e.Reason)
	}
}

// maxEffectLines bounds the per-fault lines of a long run's summary.
const maxEffectLines = 8

func note(n string) string {
	if n == "" {
		return ""
	}
	return " — " + n
}

func limit(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
}

// recoveryText says how long after rec's fault began another client
// acquired the lock: "350 ms later", or, when none did, "never" bounded by
// what was seen: a fault just before the end says little, one long before
// it says the lock did not come back.
func recoveryText(rec checker.Recovery) string {
	switch {
	case rec.NextAcquireMs != nil:
		return fmt.Sprintf("%.0f ms later", *rec.NextAcquireMs)
	case rec.WatchedMs < 50:
		return "never: the run ended as the fault began"
	default:
		return fmt.Sprintf("never in the %.1f s the run went on", rec.WatchedMs/1e3)
	}
}

// FencingNote qualifies a lease finding made with tokens checked on
// writes only (workloads.FenceWrites), where fencing was there and did not
// cure: "" otherwise.
func FencingNote(c checker.LeaseClass, fencing string) string {
	if c != checker.BeyondLease || fencing != workloads.FenceWrites {
		return ""
	}
	return "tokens were checked on writes only: a stale holder's write can land between a newer holder's read and its write (--fencing reads-writes refuses it)"
}

// LeaseClassText says a lease class as the summary and reports do.
func LeaseClassText(c checker.LeaseClass) string {
	switch c {
	case checker.NoFaultNeeded:
		return "unsafe with no fault (critical sections inside the lease)"
	case checker.InsideLease:
		return "unsafe inside the lease (a bug of the lock)"
	case checker.BeyondLease:
		return "unsafe only beyond the lease (as every unfenced lease lock; fencing is the cure)"
	}
	return "no violation"
}
