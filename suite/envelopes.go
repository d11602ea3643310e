package suite

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktest/locktest/envelope"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

// Sweep is one envelope a suite measures: how big a fault one design
// survives (package envelope). A file's envelopes block gives every
// design the same settings, seeds and points, so that the boundaries it
// finds compare like with like.
type Sweep struct {
	// Options hold the design (Base.Impl), the fault and what it grows
	// (Vary, the plan's choice for the design), and the shared settings.
	Options envelope.Options
	Line    int
}

// Name is the sweep's name in filters and output: envelope-<impl>-<fault>.
func (s Sweep) Name() string {
	return "envelope-" + impls.FileName(s.Options.Base.Impl) + "-" + s.Options.Fault
}

// EnvelopesDir holds a suite's sweeps, one directory each, under its out.
const EnvelopesDir = "envelopes"

// The fields of an envelopes block: designs and faults, how many seeds
// judge a point and how many points a sweep judges, and the settings that
// frame every sweep (the rest, a fault's size, holds and timeouts, each
// point's plan sets).
var envelopeFields = []string{"designs", "faults", "seeds", "points", "workload", "ttl", "clients", "duration", "backend"}

// envelopes reads an envelopes block into f.Sweeps: each design with
// every listed fault that applies to it, over the file's defaults.
func (p parser) envelopes(f *File, kv pair, defaults []pair) error {
	own, err := p.pairs(kv.val, kv.path, envelopeFields)
	if err != nil {
		return err
	}
	base := scenario.Defaults()
	// A point needs one strike and its aftermath; longer faults get
	// longer runs (envelope.Plan.Config), as locktest envelope does.
	base.Duration = scenario.Duration(6 * time.Second)
	opt := envelope.Options{Seeds: 5, MaxPoints: 8}
	var designPair, faultPair *pair
	var sc Scenario
	var expect *Expect
	for _, s := range append(slices.Clone(defaults), own...) {
		switch s.key.Value {
		case "designs":
			designPair = &s
		case "faults":
			if s.path == kv.path+".faults" {
				faultPair = &s
			}
		case "seeds", "points":
			if s.path != kv.path+"."+s.key.Value {
				continue // the defaults' seeds are scenario seeds
			}
			n, err := strconv.Atoi(s.val.Value)
			if s.val.Kind != yaml.ScalarNode || err != nil || n < 1 {
				return p.errAt(s.val, s.path, "want a whole number of at least 1, got %q", s.val.Value)
			}
			if s.key.Value == "seeds" {
				opt.Seeds = n
			} else {
				opt.MaxPoints = n
			}
		default:
			// Every default frames the sweep; those the plan sets per point
			// (fault sizes, holds, timeouts) are overridden there.
			if err := p.field(s, &sc, &base, &expect); err != nil {
				return err
			}
		}
	}
	switch {
	case designPair == nil:
		return p.errAt(kv.key, kv.path+".designs", "missing: give all, or a list of designs")
	case faultPair == nil:
		return p.errAt(kv.key, kv.path+".faults", "missing: give a list of faults to sweep (sweepable: %s)", strings.Join(envelope.SweepableFaults(), ", "))
	case opt.MaxPoints < 2:
		return p.errAt(kv.key, kv.path+".points", "a sweep judges at least the 2 ends of its bracket")
	}
	var all []string
	for _, d := range impls.All() {
		if d.Name != impls.ExecName {
			all = append(all, d.Name)
		}
	}
	designs, err := p.matrixNames(*designPair, all, func(name string) error {
		_, err := impls.Lookup(name)
		return err
	})
	if err != nil {
		return err
	}
	faultNames, err := p.matrixNames(*faultPair, envelope.SweepableFaults(), func(name string) error {
		if _, err := faults.Lookup(name); err != nil {
			return err
		}
		if !slices.Contains(envelope.SweepableFaults(), name) {
			return fmt.Errorf("fault %s has no single size to sweep (sweepable: %s)", name, strings.Join(envelope.SweepableFaults(), ", "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	base.Seed = 1
	applies := map[string]bool{}
	for _, dn := range designs {
		design, _ := impls.Lookup(dn.Value)
		for _, fn := range faultNames {
			fault, _ := faults.Lookup(fn.Value)
			if fault.Applies(design, faultWorkload(base.Workload)) != nil {
				continue
			}
			applies[fn.Value] = true
			o := opt
			o.Base, o.Fault = base, fn.Value
			o.Base.Impl = dn.Value
			plan, err := envelope.PlanOf(o)
			if err != nil {
				return p.errAt(fn, faultPair.path, "sweep of %s under %s: %v", dn.Value, fn.Value, err)
			}
			o.Vary = plan.Vary
			f.Sweeps = append(f.Sweeps, Sweep{Options: o, Line: fn.Line})
		}
	}
	for _, fn := range faultNames {
		if !applies[fn.Value] && faultPair.val.Value != All {
			return p.errAt(fn, faultPair.path, "fault %s applies to none of the envelopes' designs", fn.Value)
		}
	}
	return nil
}

// SweepOutcome is how one sweep of a suite ended.
type SweepOutcome struct {
	Name    string           `json:"name"`
	Impl    string           `json:"impl"`
	Fault   string           `json:"fault"`
	Vary    faults.Vary      `json:"vary"`
	Status  Status           `json:"status"`
	Finding envelope.Finding `json:"finding,omitempty"`
	// Result is the sweep's boundary in one line.
	Result      string  `json:"result,omitempty"`
	Error       string  `json:"error,omitempty"`
	Dir         string  `json:"dir"`
	Runs        int     `json:"runs"`
	WallSeconds float64 `json:"wall_seconds"`
}

// sweeps lists the sweeps opt selects, each with its directory.
func (f *File) sweeps(opt Options) []Sweep {
	var out []Sweep
	for _, s := range f.Sweeps {
		if opt.Filter != nil && !opt.Filter.MatchString(s.Name()) {
			continue
		}
		s.Options.Out = filepath.Join(opt.Out, EnvelopesDir, impls.FileName(s.Options.Base.Impl)+"-"+s.Options.Fault)
		if opt.Backend != "" {
			s.Options.Base.Backend = opt.Backend
		}
		out = append(out, s)
	}
	return out
}

// runSweeps runs sweeps, at most parallel at once (each sweep's runs go
// one after another), writing a line per point to progress.
func runSweeps(ctx context.Context, sweeps []Sweep, parallel int, progress io.Writer) []SweepOutcome {
	out := make([]SweepOutcome, len(sweeps))
	var mu sync.Mutex // one line at a time
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, s := range sweeps {
		out[i] = SweepOutcome{Name: s.Name(), Impl: s.Options.Base.Impl, Fault: s.Options.Fault, Vary: s.Options.Vary,
			Status: NotRun, Dir: s.Options.Out}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			o := s.Options
			o.Progress = &prefixed{w: progress, mu: &mu, prefix: s.Name() + " "}
			start := time.Now()
			rep, err := envelope.Sweep(ctx, o)
			res := &out[i]
			res.WallSeconds = time.Since(start).Seconds()
			switch {
			case err != nil:
				res.Status, res.Error = Errored, err.Error()
			case rep.Interrupted:
				res.Status = NotRun
			default:
				res.Status, res.Finding, res.Result, res.Runs = Pass, rep.Outcome.Finding, rep.Result(), rep.Runs
			}
			mu.Lock()
			fmt.Fprintf(progress, "%s: %s %s\n", s.Name(), res.Status, orNothing(res.Result+res.Error))
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// prefixed writes each line with a prefix, under a lock shared by
// concurrent sweeps so their lines do not interleave.
type prefixed struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			if _, err := io.WriteString(p.w, p.prefix+line); err != nil {
				return 0, err
			}
		}
	}
	return len(b), nil
}
