package explore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// Finding is a violation and the smallest scenario found that still shows
// it in most seeds.
type Finding struct {
	Trial int   `json:"trial"`
	Knobs Knobs `json:"knobs"`
	// Class is what was found (checker.LeaseClass): no fault needed,
	// inside the lease (a bug of the lock), or beyond it (the contract of
	// unfenced leases).
	Class checker.LeaseClass `json:"class"`
	// Original is the failing trial's command; Command the shrunk one, with
	// a seed it failed on.
	Original string `json:"original"`
	Command  string `json:"command"`
	// Config is the capsule's scenario: the shrunk one, its run twice as
	// long when the shrink shortened it. Seeds are the seeds the shrunk one
	// was judged on and Failed those that lost updates: the capsule runs these.
	Config scenario.Config `json:"config"`
	Seeds  []int64         `json:"seeds"`
	Failed []int64         `json:"failed_seeds"`
	Steps  []ShrinkStep    `json:"steps"`
	// Report is a failing run's report.html; Capsule the suite file.
	Report  string `json:"report"`
	Capsule string `json:"capsule"`
	// Incomplete: the shrink stopped before it was done; Stopped says why
	// (its budget ran out, the user stopped it, a run could not be made).
	Incomplete bool   `json:"incomplete,omitempty"`
	Stopped    string `json:"stopped,omitempty"`
}

// ShrinkStep is one attempt to make the scenario smaller.
type ShrinkStep struct {
	What   string `json:"what"`
	Kept   bool   `json:"kept"`
	Failed int    `json:"failed"`
	Tried  int    `json:"tried"`
}

// shrink makes the failing trial's scenario smaller one step at a time:
// a shorter run, one fault of a pair alone, fewer clients, one key, a
// smaller fault. A step is kept
// only when the smaller scenario still fails in all but at most one of
// the judging seeds, so the capsule replays.
func shrink(ctx context.Context, o Options, t Trial) *Finding {
	deadline := time.Now().Add(o.ShrinkBudget)
	store := filepath.Join(o.Out, "shrink")
	seeds := make([]int64, max(1, o.ShrinkSeeds))
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	cur := t.Knobs.Config(o.Base, 0)
	if t.Class == checker.NoFaultNeeded {
		cur = withoutFault(cur) // the capsule replays the lock's own failure
	}
	find := &Finding{Trial: t.N, Knobs: t.Knobs, Class: t.Class, Original: t.Command, Seeds: seeds,
		Report: filepath.Join(t.Dir, reports.ReportFile), Command: t.Command}
	n := 0
	// judge runs cfg on the judging seeds until its fate is sealed, and
	// returns the seeds that failed, how many ran, and a failing run; ok
	// is false when it had to stop, and find.Stopped then says why. A run
	// that could not be made is no evidence either way: it never counts
	// as "not failing".
	judge := func(cfg scenario.Config) (failed []int64, tried int, failing *reports.Results, ok bool) {
		stop := func(why string) (failed_ []int64, tried_ int, failing_ *reports.Results, ok bool) {
			find.Stopped = why
			return failed, tried, failing, false
		}
		for _, s := range seeds {
			switch {
			case ctx.Err() != nil:
				return stop("stopped by the user")
			case time.Now().After(deadline):
				return stop("the shrink budget ran out")
			}
			n++
			c := cfg
			c.Seed, c.Store, c.Scenario = s, store, fmt.Sprintf("s%02d", n)
			r, err := runner.Resolve(c)
			if err != nil {
				return stop(fmt.Sprintf("seed %d: %v", s, err))
			}
			res, err := runner.Run(ctx, r)
			if ctx.Err() != nil {
				return stop("stopped by the user")
			}
			if err != nil && res.Verdict == "" {
				return stop(fmt.Sprintf("seed %d: %v", s, err))
			}
			tried++
			if res.Verdict == checker.Invalid {
				failed = append(failed, s)
				if failing == nil {
					failing = &res
				}
			}
			if tried-len(failed) > 1 { // cannot reach all-but-one any more
				return failed, tried, failing, true
			}
		}
		return failed, tried, failing, true
	}
	accept := func(failed []int64) bool { return len(failed) >= len(seeds)-1 }

	// The trial's own run failed: with no time to judge more seeds, its
	// seed is what the capsule replays.
	find.Config, find.Failed = cur, []int64{t.Seed}
	find.Config.Seed = t.Seed
	if o.ShrinkBudget <= 0 {
		find.Seeds = find.Failed
		return find
	}
	failed, tried, failing, ok := judge(cur)
	find.Steps = append(find.Steps, ShrinkStep{What: "the trial as found, on the judging seeds", Kept: true, Failed: len(failed), Tried: tried})
	if !ok && len(failed) == 0 {
		find.Incomplete = true
		return find
	}
	find.Failed = failed
	if len(failed) == 0 {
		// Not one judging seed failed: the finding rests on the trial's
		// own seed, which the capsule replays first, at the rate these
		// seeds measured.
		find.Failed, find.Seeds = []int64{t.Seed}, append([]int64{t.Seed}, seeds[:tried]...)
		find.Steps[0].What += " (none failed: the capsule replays the trial's own seed first)"
	}
	if failing != nil {
		find.Report = filepath.Join(failing.Dir, reports.ReportFile)
		find.Command = failing.Command
	}
	for ok && accept(failed) {
		progressed := false
		for _, cand := range smaller(cur) {
			f, tr, fr, done := judge(cand.cfg)
			if !done {
				ok = false
				break
			}
			step := ShrinkStep{What: cand.what, Failed: len(f), Tried: tr, Kept: accept(f) && tr == len(seeds)}
			find.Steps = append(find.Steps, step)
			progress(o.Progress, "shrink: %-40s %d/%d failed → %s", cand.what, len(f), tr, map[bool]string{true: "kept", false: "dropped"}[step.Kept])
			if step.Kept {
				cur, find.Failed, progressed = cand.cfg, f, true
				if fr != nil {
					find.Report = filepath.Join(fr.Dir, reports.ReportFile)
					find.Command = fr.Command
				}
				break
			}
		}
		if !progressed {
			break
		}
	}
	find.Incomplete = !ok
	find.Config = cur
	// The smallest run that failed in all but one seed fails in about that
	// share of other seeds too; the capsule is a CI check, so it gets twice
	// that run's length (at most the trial's): more strikes, fewer misses.
	if trial := t.Knobs.Config(o.Base, 0).Duration; cur.Duration < trial {
		find.Config.Duration = min(2*cur.Duration, trial)
	}
	return find
}

type candidate struct {
	what string
	cfg  scenario.Config
}

// smaller lists the next smaller scenarios of c, the biggest cut first.
func smaller(c scenario.Config) []candidate {
	var out []candidate
	add := func(what string, change func(*scenario.Config)) {
		n := c
		change(&n)
		out = append(out, candidate{what, n})
	}
	// A shorter run first: every later step is then cheaper to judge.
	if d := time.Duration(c.Duration); d >= 8*time.Second {
		h := (d / 2).Round(time.Second)
		add(fmt.Sprintf("duration %s → %s", d, h), func(n *scenario.Config) { n.Duration = scenario.Duration(h) })
	}
	// One fault of a pair alone: then the pair was not needed.
	if len(c.Faults) == 1 {
		if ms := faults.Members(c.Faults[0]); len(ms) == 2 {
			add(fmt.Sprintf("%s alone (drop %s)", ms[0], ms[1]), func(n *scenario.Config) { alone(n, ms[0], false) })
			add(fmt.Sprintf("%s alone (drop %s)", ms[1], ms[0]), func(n *scenario.Config) { alone(n, ms[1], true) })
		}
	}
	if c.Clients > 2 {
		add(fmt.Sprintf("clients %d → 2", c.Clients), func(n *scenario.Config) { n.Clients = 2 })
	}
	if c.Clients > 3 {
		h := (c.Clients + 2) / 2
		add(fmt.Sprintf("clients %d → %d", c.Clients, h), func(n *scenario.Config) { n.Clients = h })
	}
	if c.Keys > 1 {
		add(fmt.Sprintf("keys %d → 1", c.Keys), func(n *scenario.Config) { n.Keys = 1 })
	}
	// The fault's size (faults.SetSize), each of a pair's; with several
	// faults, their length.
	if len(c.Faults) == 1 {
		for i, name := range faults.Members(c.Faults[0]) {
			f, err := faults.Lookup(name)
			if err != nil {
				continue
			}
			if d := faults.SizeOf(c, f); d >= 20*time.Millisecond {
				s := (d * 7 / 10).Round(time.Millisecond)
				setting := faults.SizeSetting(f)
				if setting == "fault-duration" && i == 1 {
					setting = "fault-duration2" // a pair's second's own length
				}
				add(fmt.Sprintf("%s %s → %s", setting, d, s), func(n *scenario.Config) { faults.SetSize(n, f, s) })
			}
		}
	} else if d := time.Duration(c.FaultDuration); d >= 20*time.Millisecond {
		s := (d * 7 / 10).Round(time.Millisecond)
		add(fmt.Sprintf("fault-duration %s → %s", d, s), func(n *scenario.Config) { n.FaultDuration = scenario.Duration(s) })
	}
	return out
}

// alone makes the pair of c its fault name alone, with that fault's own
// length (second: it was the pair's second, which lasted FaultDuration2),
// target and checkpoint.
func alone(c *scenario.Config, name string, second bool) {
	if second {
		c.FaultDuration = c.FaultDuration2
	}
	c.Faults, c.FaultDuration2 = []string{name}, 0
	if spec := c.FaultTarget; strings.Contains(spec, "=") { // fault=target,…
		c.FaultTarget = ""
		for _, ft := range strings.Split(spec, ",") {
			if f, t, _ := strings.Cut(ft, "="); f == name {
				c.FaultTarget = t
			}
		}
	}
	if f, err := faults.Lookup(name); err == nil && !f.Traits().AtCheckpoint {
		c.Checkpoint = ""
	}
}
