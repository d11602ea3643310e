package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// Options say what to sweep.
type Options struct {
	// Base holds the design, workload, TTL, clients, backend and the first
	// seed; its Duration is the shortest run of a point (longer faults get
	// longer runs). Its store is unused: runs go under Out.
	Base  scenario.Config
	Fault string
	// Vary is the magnitude to sweep; "" picks the fault's default.
	Vary faults.Vary
	// Seeds judge each point: Base.Seed, Base.Seed+1, …
	Seeds int
	// MaxPoints bounds the points judged, both ends of the bracket included.
	MaxPoints int
	// Out is the sweep's directory: runs/, envelope.json, envelope.png,
	// envelope.svg, summary.txt.
	Out string
	// Progress gets a line per run and per point.
	Progress io.Writer
}

// Run is one seed's run at one point.
type Run struct {
	Seed    int64           `json:"seed"`
	Verdict checker.Verdict `json:"verdict"`
	Lost    int             `json:"lost"`
	// Rejected counts stale writes a fenced resource refused: strikes that
	// took effect and were caught.
	Rejected int `json:"rejected"`
	// Strikes counts the fault's occurrences: a run without one was no try.
	Strikes int `json:"strikes"`
	// Retried counts the earlier tries of this seed that lost an update
	// while the harness did not keep time (runOne).
	Retried int     `json:"retried,omitempty"`
	Wall    float64 `json:"wall_s"`
	Dir     string  `json:"dir,omitempty"`
	Command string  `json:"command,omitempty"`
	Error   string  `json:"error,omitempty"`
	// problems say where the run's timing was not honoured.
	problems []string
}

// unsafe: the run lost an update. fair: it gave an answer after at least
// one strike.
func (r Run) unsafe() bool { return r.Verdict == checker.Invalid }
func (r Run) fair() bool {
	return r.Error == "" && r.Strikes > 0 && (r.Verdict == checker.Valid || r.Verdict == checker.Invalid)
}

// Point is one magnitude judged on every seed.
type Point struct {
	N         int     `json:"n"`
	Magnitude float64 `json:"magnitude"`
	State     State   `json:"state"`
	Unsafe    int     `json:"unsafe"`
	// Unfair counts the seeds that gave no answer (unknown verdict, harness
	// error, no strike).
	Unfair int   `json:"unfair"`
	Runs   []Run `json:"runs"`
}

// Fraction is the share of seeds that lost an update.
func (p Point) Fraction() float64 { return float64(p.Unsafe) / float64(max(1, len(p.Runs))) }

func (p *Point) judge() {
	for _, r := range p.Runs {
		switch {
		case r.unsafe():
			p.Unsafe++
		case !r.fair():
			p.Unfair++
		}
	}
	switch {
	case p.Unsafe > 0:
		p.State = Unsafe
	case p.Unfair > 0:
		p.State = Unknown
	default:
		p.State = Safe
	}
}

// Report is a sweep's result; it is envelope.json.
type Report struct {
	// Impl is the design as it is called (its --exec-name, if any).
	Impl     string            `json:"impl"`
	Workload string            `json:"workload"`
	TTL      scenario.Duration `json:"ttl"`
	Clients  int               `json:"clients"`
	Seeds    []int64           `json:"seeds"`
	Plan     Plan              `json:"plan"`
	// ServerTimeouts are the servers' timeouts the sweep ran under
	// (runner.ServerTimeoutSettings); none: each server's default.
	ServerTimeouts []string `json:"server_timeouts,omitempty"`
	// Points in the order they were judged.
	Points     []Point     `json:"points"`
	Outcome    Outcome     `json:"outcome"`
	References []Reference `json:"references,omitempty"`
	// Started orders sweeps of the same design and fault: a comparison
	// shows the newest.
	Started time.Time `json:"started"`
	Runs    int       `json:"runs"`
	Elapsed float64   `json:"elapsed_s"`
	// Interrupted: stopped by the user; the outcome is what was known.
	Interrupted bool   `json:"interrupted,omitempty"`
	Dir         string `json:"dir"`
}

// Files of a sweep's directory.
const (
	JSONFile    = reports.EnvelopeFile
	PNGFile     = "envelope.png"
	SVGFile     = "envelope.svg"
	SummaryFile = "summary.txt"
)

// Sweep finds the boundary of o.Fault's magnitude for o.Base's design and
// writes the report into o.Out. Bad input is a *runner.BadConfigError
// before anything runs; ctx cancellation stops it inside a run, and what
// was judged so far is still reported.
func Sweep(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	plan, err := check(o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create envelope dir: %w", err)
	}
	rep := &Report{Impl: runner.DesignName(o.Base), Workload: o.Base.Workload, TTL: o.Base.TTL, Clients: o.Base.Clients,
		Plan: plan, References: plan.References(), Dir: o.Out, Started: start,
		ServerTimeouts: runner.ServerTimeoutSettings(o.Base)}
	for i := range o.Seeds {
		rep.Seeds = append(rep.Seeds, o.Base.Seed+int64(i))
	}
	search := Search{Lo: plan.Lo, Hi: plan.Hi, Tol: plan.Tol, MaxPoints: o.MaxPoints}
	progress(o.Progress, "sweeping at most %d points × %d seeds (%d runs)", o.MaxPoints, len(rep.Seeds), o.MaxPoints*len(rep.Seeds))
	rep.Outcome, err = search.Run(func(m float64) State {
		if ctx.Err() != nil {
			return Unknown
		}
		pt := Point{N: len(rep.Points) + 1, Magnitude: m}
		for _, s := range rep.Seeds {
			r := runOne(ctx, plan.Config(o.Base, m, s), filepath.Join(o.Out, "runs"),
				fmt.Sprintf("p%02d-%s-s%d", pt.N, trim(m), s))
			pt.Runs = append(pt.Runs, r)
			rep.Runs++
			progress(o.Progress, "p%02d %-10s seed %-3d %-7s lost %-3d stale writes rejected %-3d strikes %d  %4.1fs%s",
				pt.N, plan.Label(m), s, r.Verdict, r.Lost, r.Rejected, r.Strikes, r.Wall, retrySuffix(r.Retried)+errSuffix(r.Error))
		}
		pt.judge()
		rep.Points = append(rep.Points, pt)
		progress(o.Progress, "p%02d %-10s %s: %d/%d seeds lost an update  [point %d of at most %d, %s]", pt.N, plan.Label(m), pt.State,
			pt.Unsafe, len(pt.Runs), pt.N, o.MaxPoints, time.Since(start).Round(time.Second))
		return pt.State
	})
	if err != nil {
		return nil, err
	}
	rep.Interrupted = ctx.Err() != nil
	rep.Elapsed = time.Since(start).Seconds()
	return rep, write(rep)
}

// Check validates the options before anything runs: the fault applies to
// the design (runner.Resolve with the first point's settings), its
// binaries are here, and the magnitude can be swept.
func Check(o Options) error {
	_, err := check(o)
	return err
}

// PlanOf validates the options as Check does but for the binaries, and
// returns the sweep's plan: a suite file is checked where its servers
// need not be installed.
func PlanOf(o Options) (Plan, error) {
	plan, _, err := prepare(o)
	return plan, err
}

func check(o Options) (Plan, error) {
	plan, r, err := prepare(o)
	if err != nil {
		return Plan{}, err
	}
	return plan, runner.CheckBinaries(r)
}

func prepare(o Options) (Plan, runner.Resolved, error) {
	bad := func(format string, args ...any) (Plan, runner.Resolved, error) {
		return Plan{}, runner.Resolved{}, &runner.BadConfigError{Err: fmt.Errorf(format, args...)}
	}
	switch {
	case o.Seeds < 1:
		return bad("--seeds %d: give at least 1 seed per point", o.Seeds)
	case o.MaxPoints < 2:
		return bad("--points %d: a sweep judges at least the 2 ends of its bracket", o.MaxPoints)
	}
	d, err := runner.LookupDesign(o.Base)
	if err != nil {
		return bad("%v", err)
	}
	v, err := ChooseVary(o.Fault, d, o.Vary)
	if err != nil {
		return bad("%v", err)
	}
	plan := NewPlan(o.Fault, v, d)
	plan.MinDuration = o.Base.Duration
	r, err := runner.Resolve(plan.Config(o.Base, plan.Lo, o.Base.Seed))
	return plan, r, err
}

// timingRetries is how often a seed is tried again when it lost an
// update in a run whose timing was not honoured.
const timingRetries = 2

// runOne runs one seed of a point. A run that fails (a harness error) is
// kept as unknown with its error: the point says so.
//
// A run that lost an update while the harness did not keep time (a
// starved machine woke the paused holder late, so its write landed later
// than the fault's size says) is no evidence at this size: the seed runs
// again, and if it never keeps time it counts as no answer. A safe run on
// a late harness stands: the fault it survived was at least as big.
func runOne(ctx context.Context, c scenario.Config, store, scenario string) Run {
	for retried := 0; ; retried++ {
		name := scenario
		if retried > 0 {
			name = fmt.Sprintf("%s-retry%d", scenario, retried)
		}
		r := tryOne(ctx, c, store, name)
		r.Retried = retried
		if r.Verdict != checker.Invalid || len(r.problems) == 0 {
			return r
		}
		if retried == timingRetries {
			r.Verdict, r.Error = checker.Unknown, "timing not honoured: "+strings.Join(r.problems, "; ")
			return r
		}
	}
}

func tryOne(ctx context.Context, c scenario.Config, store, scenario string) Run {
	c.Store, c.Scenario = store, scenario
	r := Run{Seed: c.Seed, Verdict: checker.Unknown}
	resolved, err := runner.Resolve(c)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	begin := time.Now()
	res, err := runner.Run(ctx, resolved)
	r.Wall = time.Since(begin).Seconds()
	r.Dir, r.Command = res.Dir, resolved.Command()
	if err != nil {
		r.Error = err.Error()
		if errors.Is(err, runner.ErrInterrupted) {
			r.Error = "interrupted"
		}
		return r
	}
	r.Verdict, r.Lost, r.Rejected, r.Strikes = res.Verdict, res.Checks.Stats.Lost, res.Checks.Stats.Rejected, len(res.Checks.Faults)
	if res.Health != nil {
		r.problems = res.Health.Problems
	}
	return r
}

// Sorted returns the points by magnitude, for the curve and the summary.
func (rep *Report) Sorted() []Point {
	pts := append([]Point(nil), rep.Points...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].Magnitude < pts[j].Magnitude })
	return pts
}

// point returns the point judged at m.
func (rep *Report) point(m float64) (Point, bool) {
	for _, p := range rep.Points {
		if p.Magnitude == m {
			return p, true
		}
	}
	return Point{}, false
}

func write(rep *Report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write envelope: %w", err)
	}
	files := map[string][]byte{JSONFile: append(data, '\n')}
	for name, format := range map[string]string{PNGFile: "png", SVGFile: "svg"} {
		img, err := curve(rep, format)
		if err != nil {
			return err
		}
		files[name] = img
	}
	var sum bytes.Buffer
	Print(&sum, rep)
	files[SummaryFile] = sum.Bytes()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(rep.Dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write envelope: %w", err)
		}
	}
	return nil
}

// retrySuffix says how often a seed was tried again because a run lost an
// update while the harness did not keep time.
func retrySuffix(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("  (after %d tr%s whose timing was not honoured)", n, map[bool]string{true: "y", false: "ies"}[n == 1])
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return "  (" + e + ")"
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
