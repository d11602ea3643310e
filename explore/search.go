package explore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/seed"
)

// Options say what to explore and for how long.
type Options struct {
	// Base holds the design (impl, exec settings), workload, TTL, backend
	// and anything else the search leaves alone. Its store is unused: runs
	// go under Out.
	Base scenario.Config
	// Faults to try; empty means every fault that applies to the design.
	Faults []string
	// Budget bounds the search; the shrink has its own, ShrinkBudget.
	Budget       time.Duration
	ShrinkBudget time.Duration
	// ShrinkSeeds is how many seeds judge each shrink step; a step is kept
	// when the smaller scenario fails in all but at most one of them.
	ShrinkSeeds int
	Seed        int64
	// Out is the exploration's directory: runs/, explore.json, explore.html,
	// capsule.yaml.
	Out string
	// Progress gets one line per trial.
	Progress io.Writer
	// KeepFencing: the user chose Base.Fencing, and every trial keeps it;
	// otherwise each trial draws the resource's fencing (fencingsOf).
	KeepFencing bool
}

// Trial is one run of the search.
type Trial struct {
	N      int             `json:"n"`
	Knobs  Knobs           `json:"knobs"`
	Origin string          `json:"origin"` // "fresh", "mutated from tN" or "tN with holds inside the lease"
	Seed   int64           `json:"seed"`
	Dir    string          `json:"dir,omitempty"`
	Wall   float64         `json:"wall_s"`
	Result checker.Verdict `json:"verdict"`
	Lost   int             `json:"lost"`
	// Strikes are the fault's occurrences in the run and what they did.
	Strikes []Strike `json:"strikes,omitempty"`
	Error   string   `json:"error,omitempty"`
	Command string   `json:"command,omitempty"`
	// Control is the verdict of the same run with no fault, made when the
	// trial lost updates: invalid means the fault was not needed.
	Control checker.Verdict `json:"control,omitempty"`
	// Class is what a trial that lost updates found (checker.LeaseClass):
	// no fault needed, inside the lease, or beyond it.
	Class checker.LeaseClass `json:"class,omitempty"`
}

// holdsInsideLease reports whether every critical section of the trial was
// shorter than the lease, so that a lock that loses updates with them and
// no fault is broken, not merely outlived.
func (t Trial) holdsInsideLease() bool { return t.Knobs.Hold*(1+t.Knobs.HoldSpread) < 1 }

func (t Trial) controlNote() string {
	switch {
	case t.Control == "":
		return ""
	case t.Class == checker.NoFaultNeeded:
		return "  (lost updates without the fault too, every critical section inside the lease: no fault needed)"
	case t.Control == checker.Invalid:
		return "  (lost updates without the fault too, with critical sections past the lease: holds capped below this one, the point tried again inside the lease)"
	}
	return "  (control without the fault: " + string(t.Control) + "; " + string(t.Class) + ")"
}

// withoutFault is c with no fault: the control run.
func withoutFault(c scenario.Config) scenario.Config {
	c.Faults, c.FaultTarget, c.FaultMoment, c.FaultDuration2 = []string{faults.None}, "", "", 0
	return c
}

// control runs cfg again with no fault, same seed: did the fault cause
// the lost updates, or would the workload have lost them anyway? A control
// that ends unknown (a client that never answered) says neither, so it is
// run once more before the fault is given the credit.
func control(ctx context.Context, cfg runner.Resolved) checker.Verdict {
	c := withoutFault(cfg.Config)
	c.Scenario += "-control"
	r, err := runner.Resolve(c)
	if err != nil {
		return checker.Unknown
	}
	v := checker.Unknown
	for try := 0; try < 2 && v == checker.Unknown && ctx.Err() == nil; try++ {
		if res, err := runner.Run(ctx, r); err == nil {
			v = res.Verdict
		}
	}
	return v
}

// score ranks trials of one fault for steering: a violation first, then
// the share of strikes that took effect, then those that disturbed.
func (t Trial) score() float64 {
	if t.Result == checker.Invalid {
		return 1e9
	}
	var s float64
	for _, st := range t.Strikes {
		switch st.Effect {
		case checker.Effective:
			s += 1
		case checker.Disturbed:
			s += 0.25
		}
	}
	return s / float64(max(1, len(t.Strikes)))
}

// Unjudged counts the trials whose run could not be judged (unknown: a
// client that never answered, a run cut short), which back no coverage.
func (r *Report) Unjudged() int {
	n := 0
	for _, t := range r.Trials {
		if t.Result != checker.Valid && t.Result != checker.Invalid {
			n++
		}
	}
	return n
}

// Unknown reports whether the search can say nothing: no finding, and not
// one trial judged. "No violation found" would then claim a coverage that
// no run gave.
func (r *Report) Unknown() bool { return r.Found == nil && r.Unjudged() == len(r.Trials) }

// Report is what an exploration found and covered; it is explore.json.
type Report struct {
	// Impl is the design as it is called (its --exec-name, if any).
	Impl     string   `json:"impl"`
	Workload string   `json:"workload"`
	Seed     int64    `json:"seed"`
	Faults   []string `json:"faults"`
	// Skipped faults apply to the design in general but not here, and why.
	Skipped map[string]string `json:"skipped,omitempty"`
	Budget  float64           `json:"budget_s"`
	Elapsed float64           `json:"elapsed_s"`
	Trials  []Trial           `json:"trials"`
	// PairShare is the share of fresh draws that paired their fault with
	// another striking together with it, where the fault had a partner.
	PairShare float64 `json:"pair_share"`
	// Rejected counts drawn points refused before running, by reason.
	Rejected map[string]int  `json:"rejected,omitempty"`
	Coverage []FaultCoverage `json:"coverage"`
	// Found is the worst finding (checker.LeaseClass.Worse), shrunk; Also
	// the first trial of each other class found on the way.
	Found *Finding `json:"found,omitempty"`
	Also  []Trial  `json:"also,omitempty"`
	// FoundAfter is the search time until the violating trial ended.
	FoundAfter float64 `json:"found_after_s,omitempty"`
	// HoldCap is the longest critical section (in TTLs) the search kept
	// drawing after trials lost updates without any fault; 0 if none did.
	HoldCap float64 `json:"hold_cap_ttl,omitempty"`
	// Interrupted: stopped by the user before the budget ran out.
	Interrupted bool   `json:"interrupted,omitempty"`
	Dir         string `json:"dir"`
}

// Explore runs the search until a violation or the end of the budget,
// shrinks what it found, and writes the report and capsule into o.Out.
// ctx cancellation stops it between or inside runs; what was done so far
// is still reported.
func Explore(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	design, err := runner.LookupDesign(o.Base)
	if err != nil {
		return nil, &runner.BadConfigError{Err: err}
	}
	fs, skipped, err := candidateFaults(o.Base, o.Faults)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create explore dir: %w", err)
	}
	rep := &Report{Impl: runner.DesignName(o.Base), Workload: o.Base.Workload, Seed: o.Seed, Skipped: skipped,
		Budget: o.Budget.Seconds(), Rejected: map[string]int{}, Dir: o.Out, PairShare: pairShare}
	for _, f := range fs {
		rep.Faults = append(rep.Faults, f.Name())
	}
	var fencings []string
	if !o.KeepFencing {
		fencings = fencingsOf(design, o.Base.Workload)
	}
	rng := seed.Stream(o.Seed, seed.Explore, 0)
	best := map[string]Trial{}
	// holdHi falls when a violation turns out not to need the fault: the
	// critical section alone outlived what the lock guarantees, which
	// every fault would then "find".
	holdHi := holdRange[1]
	deadline := start.Add(o.Budget)
	// found is the worst finding so far. A finding beyond the lease is
	// what every unfenced lease lock shows, so the search goes on with the
	// budget left for one inside it: half the points then fit their fault
	// and critical section inside the lease (underLease), and plain
	// contention with no fault joins the faults.
	var found *Trial
	underLease := false
	rejected := map[faults.Fault]int{}
	// Faults are tried in a seeded order, each once, then by promise.
	rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	pick := newBandit(fs)
	pairable := partners(fs)
	// retry is the next point when a trial lost updates that its control
	// lost too, with critical sections past the lease: the same point with
	// them inside it, so that its fault is judged on its own instead of
	// being written off with the holds that hid it.
	var retry *pending
	progress(o.Progress, "searching for %s (until %s; the trial under way then runs to its end, with its retry if it needs one), then shrinking a finding for up to %s",
		o.Budget, deadline.Format(time.TimeOnly), o.ShrinkBudget)
	// A retry belongs to the trial it retries, which began in time: it
	// runs past the deadline as the trial under way does.
	for n := 1; (retry != nil || time.Now().Before(deadline)) && ctx.Err() == nil; n++ {
		var f faults.Fault
		var t Trial
		capped := false
		if retry != nil {
			f, t = retry.fault, retry.trial
			t.N, retry = n, nil
		} else {
			f = pick.next()
			t = Trial{N: n, Origin: "fresh", Seed: rng.Int64N(1 << 31)}
			// Under the lease, half the draws stay free: bugs that begin
			// with a lease running out (a release or a renewal that does
			// not check its owner, by a client whose lease expired) need a
			// fault that outlasts the lease to show at all.
			capped = underLease && rng.IntN(2) == 0
			hi := holdHi
			if capped {
				hi = min(hi, maxHoldUnderLease)
			}
			if b, ok := best[f.Name()]; ok && b.score() > 0 && rng.IntN(5) < 3 {
				t.Knobs, t.Origin = mutate(rng, b.Knobs, f, design.Roles, design.Checkpoints, hi), fmt.Sprintf("mutated from t%d", b.N)
				if len(fencings) > 1 && rng.IntN(4) == 0 {
					t.Knobs.Fencing = pickFencing(rng, fencings)
				}
			} else {
				var g faults.Fault
				if ps := pairable[f]; len(ps) > 0 && rng.Float64() < pairShare {
					g = ps[rng.IntN(len(ps))]
				}
				t.Knobs = fresh(rng, f, g, design.Roles, design.Checkpoints, hi)
				t.Knobs.Fencing = pickFencing(rng, fencings)
			}
			if capped {
				t.Knobs = t.Knobs.underLease()
			}
		}
		// Under the lease the runner's warnings (a pause that cannot
		// outlive the lease, a delay that lands inside it) describe every
		// point on purpose: only refusals stop a draw there.
		cfg, reason := t.Knobs.resolve(o.Base, t.Seed, filepath.Join(o.Out, "runs"), fmt.Sprintf("t%03d-%s", n, t.Knobs.item()), !capped)
		if reason != "" {
			rep.Rejected[numbers.ReplaceAllString(reason, "N")]++
			// A fault none of whose draws can run must not hold the
			// search: after many in a row it counts as a worthless try.
			if rejected[f]++; rejected[f]%maxRejected == 0 {
				pick.record(f, 0)
			}
			n--
			continue
		}
		rejected[f] = 0
		t.run(ctx, cfg)
		if t.Result == checker.Invalid {
			// A fault-free rerun that fails too never makes a finding
			// nothing: with critical sections inside the lease it is the
			// strongest finding there is. Only sections that outlived the
			// lease are the workload's doing, and get capped.
			t.Control = control(ctx, cfg)
			switch {
			case t.Control == checker.Invalid && t.holdsInsideLease():
				t.Class = checker.NoFaultNeeded
			case t.Control == checker.Invalid:
				holdHi = max(holdRange[0], min(holdHi, 0.8*t.Knobs.Hold))
				rep.HoldCap = holdHi
				k := t.Knobs
				k.Hold = min(holdHi, maxHoldRetried/(1+k.HoldSpread))
				retry = &pending{f, Trial{Knobs: k, Seed: t.Seed, Origin: fmt.Sprintf("t%d with holds inside the lease", t.N)}}
			}
		}
		rep.Trials = append(rep.Trials, t)
		progress(o.Progress, "t%03d %-8s %5.1fs  %s%s  [%s of %s]", n, t.Result, t.Wall, t.Knobs, t.controlNote(),
			time.Since(start).Round(time.Second), o.Budget)
		if t.Result == checker.Invalid && (t.Control != checker.Invalid || t.Class == checker.NoFaultNeeded) {
			switch {
			case found == nil || t.Class.Worse(found.Class):
				if found != nil {
					rep.Also = append(rep.Also, *found)
				}
				found = &t
				rep.FoundAfter = time.Since(start).Seconds()
			case !slices.ContainsFunc(rep.Also, func(a Trial) bool { return a.Class == t.Class }) && t.Class != found.Class:
				rep.Also = append(rep.Also, t)
			}
			if found.Class != checker.BeyondLease {
				break // a bug of the lock: nothing worse to look for
			}
			if !underLease {
				underLease = true
				progress(o.Progress, "t%03d found lost updates beyond the lease; searching on for one inside it", n)
				if none, err := faults.Lookup(faults.None); err == nil {
					pick.add(none)
				}
			}
		}
		pick.record(f, t.score())
		if b, ok := best[f.Name()]; !ok || t.score() > b.score() {
			best[f.Name()] = t
		}
	}
	rep.Interrupted = ctx.Err() != nil
	rep.Elapsed = time.Since(start).Seconds()
	if found != nil && !rep.Interrupted {
		rep.Found = shrink(ctx, o, *found)
	}
	rep.Coverage = coverage(rep.Trials, pick.faults)
	if err := write(rep, o); err != nil {
		return rep, err
	}
	return rep, nil
}

// trialCheckTimeout bounds the mutual-exclusion check of a trial that
// the resource's check decides.
const trialCheckTimeout = scenario.Duration(15 * time.Second)

// maxHoldRetried is the longest critical section, in TTLs, of a point
// tried again with its holds inside the lease: short of it by the
// scheduling slack a client's critical section may overrun.
const maxHoldRetried = 0.9

// pending is a trial chosen ahead of the draw, with its fault.
type pending struct {
	fault faults.Fault
	trial Trial
}

// maxRejected is how many draws of one fault in a row may be refused
// before the fault is charged a worthless try.
const maxRejected = 1000

// numbers are the figures in a rejection reason, folded so that reasons
// count by kind.
var numbers = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(ms|µs|s|m|h)?`)

// bandit chooses the fault of the next trial: every fault once, in order,
// then the one with the highest upper confidence bound (UCB1) on its trials'
// scores, so the budget goes to faults whose strikes take effect without
// starving the others.
type bandit struct {
	faults []faults.Fault
	tries  []int
	sum    []float64
	total  int
}

func newBandit(fs []faults.Fault) *bandit {
	return &bandit{faults: fs, tries: make([]int, len(fs)), sum: make([]float64, len(fs))}
}

func (b *bandit) next() faults.Fault {
	best, bestV := 0, -1.0
	for i := range b.faults {
		if b.tries[i] == 0 {
			return b.faults[i]
		}
		v := b.sum[i]/float64(b.tries[i]) + math.Sqrt(2*math.Log(float64(b.total))/float64(b.tries[i]))
		if v > bestV {
			best, bestV = i, v
		}
	}
	return b.faults[best]
}

// add makes f a new arm, tried once after the faults not yet tried: the
// search goes on where it was, not from the first fault again (which left
// the faults it had not reached untried for the rest of a budget).
func (b *bandit) add(f faults.Fault) {
	b.faults = append(b.faults, f)
	b.tries = append(b.tries, 0)
	b.sum = append(b.sum, 0)
}

// record adds a trial's score, capped at 1 (a violation scores no more).
func (b *bandit) record(f faults.Fault, score float64) {
	i := slices.Index(b.faults, f)
	b.tries[i]++
	b.sum[i] += min(score, 1)
	b.total++
}

// resolve turns a point into a checked run configuration, or says why the
// point cannot show anything (runner's warnings) or cannot run at all.
func (k Knobs) resolve(base scenario.Config, runSeed int64, store, scenario string, warn bool) (runner.Resolved, string) {
	c := k.Config(base, runSeed)
	c.Store, c.Scenario = store, scenario
	r, err := runner.Resolve(c)
	if err != nil {
		return r, "refused by the runner: " + err.Error()
	}
	// A trial that keeps a resource is judged by the resource's check; the
	// mutual-exclusion check may spend its whole timeout on a history with
	// many acquires of unknown outcome (a minute on 46 operations), which a
	// search cannot spare.
	if r.Workload.NeedsResource {
		r.CheckTimeout = min(r.CheckTimeout, trialCheckTimeout)
	}
	if w := runner.Warnings(r); warn && len(w) > 0 {
		return r, w[0]
	}
	return r, ""
}

// run runs one trial and records its outcome. A run that fails (a harness
// error) is kept as unknown with its error: the search goes on.
func (t *Trial) run(ctx context.Context, cfg runner.Resolved) {
	begin := time.Now()
	res, err := runner.Run(ctx, cfg)
	t.Wall = time.Since(begin).Seconds()
	t.Dir, t.Command = res.Dir, cfg.Command()
	t.Result = res.Verdict
	if err != nil {
		t.Result, t.Error = checker.Unknown, err.Error()
		if errors.Is(err, runner.ErrInterrupted) {
			t.Error = "interrupted"
		}
		return
	}
	t.Lost = res.Checks.Stats.Lost
	t.Strikes = strikesOf(res)
	if l := res.Checks.Lease; l != nil && t.Result == checker.Invalid {
		t.Class = l.Class
	}
}

// candidateFaults returns the faults to search: those named (a pair's
// two, which the search then pairs as it pairs any), or every fault that
// applies to the design and workload, each checked by the runner with its
// default settings. Faults the runner refuses here are skipped with the
// reason.
func candidateFaults(base scenario.Config, names []string) ([]faults.Fault, map[string]string, error) {
	skipped := map[string]string{}
	all := len(names) == 0
	names = faults.MemberNames(names)
	if all {
		for _, f := range faults.All() {
			if !f.Traits().Inert {
				names = append(names, f.Name())
			}
		}
	}
	var out []faults.Fault
	for _, n := range names {
		c := base
		c.Faults = []string{n}
		r, err := runner.Resolve(c)
		if err == nil {
			err = runner.CheckBinaries(r)
		}
		if err != nil {
			if !all {
				return nil, nil, err
			}
			skipped[n] = err.Error()
			continue
		}
		out = append(out, r.Faults[0])
	}
	if len(out) == 0 {
		return nil, nil, &runner.BadConfigError{Err: fmt.Errorf("no fault applies to impl %s (%v)", base.Impl, skipped)}
	}
	return out, skipped, nil
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
