package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/envelope"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
)

// Options tune a suite run.
type Options struct {
	// Out receives every run directory (under runs/) and the suite's
	// reports.
	Out string
	// Parallel bounds how many runs go at once; 0 means DefaultParallel.
	Parallel int
	// Seeds, when > 0, runs every scenario with seeds 1..Seeds instead of
	// its own: how detection rates are measured.
	Seeds int
	// Filter, when set, keeps the scenarios whose name it matches.
	Filter *regexp.Regexp
	// Progress receives the progress display; Terminal redraws one status
	// line instead of printing plain lines.
	Progress io.Writer
	Terminal bool
	// Backend, when set, runs every scenario's servers there ("docker"),
	// whatever the file says.
	Backend string
	// Network, when set, makes every scenario's link faults so ("netns"
	// or "proxy"), whatever the file says.
	Network string
	// Shard, when set, runs only that part of the selected runs (see
	// assignShards); Merge puts the parts back together.
	Shard *Shard
}

// DefaultParallel is one run per core, at most 4: each run is a handful of
// mostly sleeping processes, but a fault's timing (a pause longer than the
// TTL) must not be blurred by a starved CPU.
func DefaultParallel() int { return max(1, min(runtime.NumCPU(), 4)) }

// Status is how one run ended against its expectation.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Errored: the run could not finish (a server failed to start, …).
	Errored Status = "error"
	// NotRun: the suite was interrupted before or during the run.
	NotRun Status = "not run"
)

// Outcome is one scenario × seed.
type Outcome struct {
	// Index is the run's position among every run the suite selected
	// (scenarios in file order, then seeds), whichever shard ran it: a
	// merge lists the runs in the order one whole run would.
	Index     int      `json:"index"`
	Scenario  string   `json:"scenario"`
	Anomalies []string `json:"anomalies,omitempty"`
	Impl      string   `json:"impl"`
	Workload  string   `json:"workload"`
	Faults    []string `json:"faults"`
	Seed      int64    `json:"seed"`
	Expected  string   `json:"expected"`
	// Unmeasured: the scenario is a matrix cell at the matrix's default
	// expectation.
	Unmeasured bool `json:"unmeasured,omitempty"`
	// AnySeed: the scenario passes when any one of its seeds shows what
	// it expects (Expect.AnySeed); settleAnySeed judges its runs together.
	AnySeed bool            `json:"any_seed,omitempty"`
	Status  Status          `json:"status"`
	Verdict checker.Verdict `json:"verdict,omitempty"`
	Mutex   checker.Verdict `json:"mutex,omitempty"`
	// Got is what the run showed, in the expectation's terms.
	Got     string   `json:"got,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Command reproduces the run on its own.
	Command     string  `json:"command"`
	Dir         string  `json:"dir,omitempty"`
	WallSeconds float64 `json:"wall_seconds"`
	Ops         int     `json:"ops"`
	LostUpdates int     `json:"lost_updates"`
}

// Report is a whole suite run, one shard of it, or the merge of shards;
// it is written as suite.json.
type Report struct {
	Suite string `json:"suite"`
	File  string `json:"file"`
	// Digest (of the suite file), Build, Seeds, Filter and Backend say
	// which runs were selected and how they were judged: shards merge only
	// when they all agree.
	Digest      string        `json:"digest"`
	Build       reports.Build `json:"build"`
	Seeds       int           `json:"seeds,omitempty"`
	Filter      string        `json:"filter,omitempty"`
	Backend     string        `json:"backend,omitempty"`
	Out         string        `json:"out"`
	Parallel    int           `json:"parallel"`
	Started     time.Time     `json:"started"`
	WallSeconds float64       `json:"wall_seconds"`
	Interrupted bool          `json:"interrupted,omitempty"`
	// Shard is set on the output of suite run --shard: which part it ran.
	Shard *Shard `json:"shard,omitempty"`
	// Merged lists the shard outputs a merge combined, and Missing the
	// shards (counted from 1) it lacked: a merge with shards missing is
	// incomplete and never passes.
	Merged   []string  `json:"merged,omitempty"`
	Missing  []int     `json:"missing_shards,omitempty"`
	Outcomes []Outcome `json:"outcomes"`
	// Envelopes are the sweeps of the file's envelopes block.
	Envelopes []SweepOutcome `json:"envelopes,omitempty"`
}

// Passed reports whether every run matched its expectation.
func (r Report) Passed() bool {
	for _, o := range r.Outcomes {
		if o.Status != Pass {
			return false
		}
	}
	for _, e := range r.Envelopes {
		if e.Status != Pass {
			return false
		}
	}
	return !r.Interrupted && len(r.Missing) == 0 && len(r.Outcomes)+len(r.Envelopes) > 0
}

// job is one run to do; index is its position among the selected runs.
type job struct {
	index int
	sc    *Scenario
	cfg   runner.Resolved
}

// runKey names a run's directory under <out>/runs.
func runKey(scenario string, seed int64) string { return fmt.Sprintf("%s-seed%d", scenario, seed) }

// MaxRuns bounds the runs one suite run selects, counted before they are
// listed: --seeds 1000000000 would otherwise fill memory with run
// configurations before the first run starts (2.4 GB in 21 s). The full
// suite is 593 runs, 51 minutes at --parallel 2: 10000 runs are about
// 14 hours of those, as long a campaign as one invocation should be.
const MaxRuns = 10000

// selected is how many runs the scenarios opt selects make, counting at
// most MaxRuns+1 seeds per scenario (so that it cannot overflow).
func (f *File) selected(opt Options) int {
	n := 0
	for _, sc := range f.Scenarios {
		switch {
		case opt.Filter != nil && !opt.Filter.MatchString(sc.Name):
		case opt.Seeds > 0:
			n += min(opt.Seeds, MaxRuns+1)
		default:
			n += len(sc.Runs)
		}
	}
	return n
}

// jobs lists the runs of the selected scenarios, each with its own store
// under out/runs (own latest links, own history to watch).
func (f *File) jobs(opt Options) ([]job, error) {
	if f.selected(opt) > MaxRuns {
		return nil, &runner.BadConfigError{Err: fmt.Errorf("the selected scenarios × seeds make more than %d runs, the most one suite run takes: select fewer with --run, or give fewer --seeds", MaxRuns)}
	}
	var out []job
	for _, sc := range f.Scenarios {
		if opt.Filter != nil && !opt.Filter.MatchString(sc.Name) {
			continue
		}
		runs := sc.Runs
		if opt.Seeds > 0 {
			runs = nil
			for s := range opt.Seeds {
				r := sc.Runs[0]
				r.Seed = int64(s + 1)
				runs = append(runs, r)
			}
		}
		for _, r := range runs {
			r.Store = filepath.Join(opt.Out, RunsDir, runKey(sc.Name, r.Seed))
			if opt.Backend != "" {
				r.Backend = opt.Backend
			}
			if opt.Network != "" {
				r.AskedNetwork = opt.Network
			}
			if opt.Network != "" || opt.Backend != "" {
				if err := runner.ResolveNetwork(&r); err != nil {
					return nil, err
				}
			}
			out = append(out, job{index: len(out), sc: sc, cfg: r})
		}
	}
	return out, nil
}

// Run runs the suite and judges every run. Bad input (a missing server
// binary, an unusable --out) is refused before anything starts, as a
// *runner.BadConfigError. When ctx is cancelled every run stops, every
// process is gone when Run returns, and the report marks the suite
// interrupted.
func Run(ctx context.Context, f *File, opt Options) (Report, error) {
	if opt.Parallel <= 0 {
		opt.Parallel = DefaultParallel()
	}
	if opt.Progress == nil {
		opt.Progress = io.Discard
	}
	jobs, err := f.jobs(opt)
	if err != nil {
		return Report{}, err
	}
	sweeps := f.sweeps(opt)
	if len(jobs)+len(sweeps) == 0 {
		return Report{}, &runner.BadConfigError{Err: fmt.Errorf("--run %v matches no scenario of %s", opt.Filter, f.Path)}
	}
	var shard *Shard
	if opt.Shard != nil {
		s := *opt.Shard
		if jobs, err = s.pick(jobs); err != nil {
			return Report{}, err
		}
		sweeps = s.pickSweeps(sweeps)
		shard = &s
	}
	// Checked before any run starts, each step gives way to Ctrl-C: a
	// long selection must not make the interrupt wait for the runs.
	for _, j := range jobs {
		if ctx.Err() != nil {
			return Report{}, runner.ErrInterrupted
		}
		if err := runner.CheckBinaries(j.cfg); err != nil {
			return Report{}, err
		}
	}
	for _, s := range sweeps {
		if ctx.Err() != nil {
			return Report{}, runner.ErrInterrupted
		}
		if err := envelope.Check(s.Options); err != nil {
			return Report{}, err
		}
	}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return Report{}, &runner.BadConfigError{Err: fmt.Errorf("--out: %w", err)}
	}
	rep := Report{Suite: f.Name, File: f.Path, Digest: f.Digest, Build: reports.CurrentBuild(), Seeds: opt.Seeds,
		Backend: opt.Backend, Out: opt.Out, Parallel: opt.Parallel, Started: time.Now(), Shard: shard,
		Outcomes: make([]Outcome, len(jobs))}
	if opt.Filter != nil {
		rep.Filter = opt.Filter.String()
	}
	for i, j := range jobs {
		rep.Outcomes[i] = newOutcome(j)
	}
	prog := newProgress(opt.Progress, opt.Terminal, len(jobs))
	// slots bound the runs in flight; they are taken in file order. No
	// scenario runs alone: the quick suite's (pauses, failover, etcd) gave
	// no false positive and no missed anomaly with 4 runs at once on 2
	// cores.
	slots := make(chan struct{}, opt.Parallel)
	var wg sync.WaitGroup
dispatch:
	for i, j := range jobs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break dispatch
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			prog.begin(i, j)
			runOne(ctx, j, &rep.Outcomes[i])
			prog.end(i, rep.Outcomes[i])
		}()
	}
	wg.Wait()
	prog.close()
	settleAnySeed(rep.Outcomes)
	if len(sweeps) > 0 && ctx.Err() == nil {
		fmt.Fprintf(opt.Progress, "envelopes: %d sweep(s), %d at once\n", len(sweeps), opt.Parallel)
		rep.Envelopes = runSweeps(ctx, sweeps, opt.Parallel, opt.Progress)
	}
	rep.Interrupted = ctx.Err() != nil
	rep.WallSeconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

// settleAnySeed judges the runs of each any-seed scenario together: when
// one of them showed the expected violation, the others of that scenario
// pass too, saying which seed showed it. A merge settles again, since a
// scenario's seeds may have run in different shards.
func settleAnySeed(os []Outcome) {
	showed := map[string]int64{}
	for _, o := range os {
		if o.AnySeed && o.Status == Pass {
			if _, ok := showed[o.Scenario]; !ok {
				showed[o.Scenario] = o.Seed
			}
		}
	}
	for i := range os {
		o := &os[i]
		if s, ok := showed[o.Scenario]; ok && o.AnySeed && o.Status == Fail {
			o.Status = Pass
			o.Reasons = append(o.Reasons, fmt.Sprintf("seed %d showed it, and the scenario expects it in any one seed", s))
		}
	}
}

func newOutcome(j job) Outcome {
	return Outcome{Index: j.index, Scenario: j.sc.Name, Anomalies: j.sc.Anomalies, Impl: runner.DesignName(j.cfg.Config), Workload: j.cfg.Workload.Name,
		Faults: j.cfg.Config.Faults, Seed: j.cfg.Seed, Expected: j.sc.Expect.String(), Unmeasured: j.sc.Unmeasured,
		AnySeed: j.sc.Expect.AnySeed, Status: NotRun,
		Command: j.cfg.Command()}
}

// runOne runs one job and judges it into o.
func runOne(ctx context.Context, j job, o *Outcome) {
	start := time.Now()
	res, err := runner.Run(ctx, j.cfg)
	o.WallSeconds = time.Since(start).Seconds()
	o.Dir = res.Dir
	switch {
	case errors.Is(err, runner.ErrInterrupted) || (err != nil && ctx.Err() != nil):
		o.Status = NotRun
		return
	case err != nil:
		o.Status, o.Error = Errored, err.Error()
		return
	}
	o.Verdict, o.Mutex = res.Verdict, res.Checks.Mutex.Verdict
	o.LostUpdates = res.Checks.Stats.Lost
	m := res.Metrics
	for _, c := range []checker.Outcomes{m.Acquires, m.Releases, m.Increments} {
		o.Ops += c.OK + c.Fail + c.Info
	}
	o.Got, o.Reasons = j.sc.Expect.Judge(res, time.Duration(j.cfg.TTL))
	o.Status = Pass
	if len(o.Reasons) > 0 {
		o.Status = Fail
	}
}
