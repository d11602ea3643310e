package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/locktest/locktest/checker"
)

// ErrNoRuns is returned by LoadRuns when the paths hold no checked run.
var ErrNoRuns = errors.New("no run with results.json found")

// LoadRuns reads the results of every run under paths. A path is a run
// directory or any directory above runs (a store, a suite's output); links
// such as latest are not followed, so no run counts twice. A directory
// with a history but no results (a killed run) is named in the notes.
func LoadRuns(paths []string) ([]Results, []string, error) {
	var runs []Results
	var notes []string
	seen := map[string]bool{}
	for _, p := range paths {
		root, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, nil, err
		}
		err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if name := d.Name(); dir != root && (name == NodeLogsDir || name == WorkerLogDir) {
				return fs.SkipDir // server data and logs of a run
			}
			_, rerr := os.Stat(filepath.Join(dir, ResultsFile))
			_, herr := os.Stat(filepath.Join(dir, HistoryFile))
			switch {
			case rerr == nil:
				if seen[dir] {
					return fs.SkipDir
				}
				seen[dir] = true
				r, err := ReadResults(dir)
				if err != nil {
					return err
				}
				r.Dir = dir // runs get moved (CI artifacts); trust where we found it
				runs = append(runs, r)
				return fs.SkipDir
			case herr == nil:
				notes = append(notes, fmt.Sprintf("%s has a history but no results (killed run?): locktest analyze %s", dir, dir))
				return fs.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("read runs: %w", err)
		}
	}
	if len(runs) == 0 {
		return nil, notes, fmt.Errorf("%w under %s", ErrNoRuns, strings.Join(paths, ", "))
	}
	return runs, notes, nil
}

// Latest keeps the newest run of each scenario: run directories are named
// by their start time, so the greatest name is the newest.
func Latest(runs []Results) []Results {
	newest := map[string]Results{}
	for _, r := range runs {
		if cur, ok := newest[r.Scenario]; !ok || filepath.Base(r.Dir) > filepath.Base(cur.Dir) {
			newest[r.Scenario] = r
		}
	}
	out := make([]Results, 0, len(newest))
	for _, r := range newest {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scenario < out[j].Scenario })
	return out
}

// Cell summarizes the runs of one design under one fault.
type Cell struct {
	Design string `json:"design"`
	Fault  string `json:"fault"`
	// Outcome is unsafe if any run was, else unknown if any run was, else
	// safe: one counterexample is enough.
	Outcome  Outcome `json:"outcome"`
	Runs     int     `json:"runs"`
	Safe     int     `json:"safe_runs"`
	Unsafe   int     `json:"unsafe_runs"`
	Unknown  int     `json:"unknown_runs"`
	Workload string  `json:"workload"`
	// MutexUnsafe counts runs in which two clients believed they held the
	// lock at once: for a fenced design the data can be safe regardless.
	MutexUnsafe int `json:"mutex_unsafe_runs"`
	LostUpdates int `json:"lost_updates"`
	// FirstViolationS is the earliest violation of the deciding check,
	// seconds from the start of its run.
	FirstViolationS *float64 `json:"first_violation_s,omitempty"`
	// The median over runs of each run's figures.
	AcquireP50Ms           float64 `json:"acquire_p50_ms"`
	AcquireP99Ms           float64 `json:"acquire_p99_ms"`
	Throughput             float64 `json:"throughput"`
	CommandsPerAcquisition float64 `json:"commands_per_acquisition"`
	// RecoveryMs is the median, over every fault of every run, of the time
	// from the fault's start (a holder paused or killed) until another
	// client acquired the lock; RecoveryNever counts faults after which no
	// one did before the run ended.
	RecoveryMs    *float64 `json:"recovery_ms,omitempty"`
	Recoveries    int      `json:"recoveries"`
	RecoveryNever int      `json:"recovery_never"`
	// Command reproduces the first unsafe run (or the first run).
	Command string   `json:"command"`
	Dirs    []string `json:"dirs"`
}

// Matrix is the comparison of designs (rows) under faults (columns).
type Matrix struct {
	Designs []string `json:"designs"`
	Faults  []string `json:"faults"`
	Cells   []Cell   `json:"cells"`
	Notes   []string `json:"notes,omitempty"`
}

// NewMatrix groups runs by design and fault. When the runs mix workloads
// the design label names the workload too, since a verdict means different
// things for each.
func NewMatrix(runs []Results) Matrix {
	workloads := map[string]bool{}
	for _, r := range runs {
		workloads[r.Workload] = true
	}
	type key struct{ design, fault string }
	groups := map[key][]Results{}
	var m Matrix
	designs, faults := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		k := key{r.Impl, strings.Join(r.Faults, "+")}
		if len(workloads) > 1 {
			k.design += " (" + r.Workload + ")"
		}
		groups[k] = append(groups[k], r)
		if !designs[k.design] {
			designs[k.design] = true
			m.Designs = append(m.Designs, k.design)
		}
		if !faults[k.fault] {
			faults[k.fault] = true
			m.Faults = append(m.Faults, k.fault)
		}
	}
	sort.Strings(m.Designs)
	sort.Slice(m.Faults, func(i, j int) bool {
		a, b := m.Faults[i], m.Faults[j]
		if (a == "none") != (b == "none") {
			return a == "none" // the control column first
		}
		return a < b
	})
	for _, d := range m.Designs {
		for _, f := range m.Faults {
			if rs := groups[key{d, f}]; len(rs) > 0 {
				m.Cells = append(m.Cells, newCell(d, f, rs))
			}
		}
	}
	return m
}

func newCell(design, fault string, rs []Results) Cell {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Dir < rs[j].Dir })
	c := Cell{Design: design, Fault: fault, Runs: len(rs), Workload: rs[0].Workload, Command: rs[0].Command}
	var p50, p99, tput, cmds, rec []float64
	for _, r := range rs {
		c.Dirs = append(c.Dirs, r.Dir)
		switch OutcomeOf(r.Verdict) {
		case Safe:
			c.Safe++
		case Unsafe:
			if c.Unsafe == 0 {
				c.Command = r.Command
			}
			c.Unsafe++
		default:
			c.Unknown++
		}
		if r.Checks.Mutex.Verdict == checker.Invalid {
			c.MutexUnsafe++
		}
		c.LostUpdates += r.Checks.Stats.Lost
		if fv := r.decider().FirstViolationS; fv != nil && (c.FirstViolationS == nil || *fv < *c.FirstViolationS) {
			v := *fv
			c.FirstViolationS = &v
		}
		m := r.Metrics
		p50, p99 = append(p50, m.AcquireP50Ms), append(p99, m.AcquireP99Ms)
		tput, cmds = append(tput, m.Throughput), append(cmds, m.CommandsPerAcquisition)
		for _, rc := range m.Recoveries {
			c.Recoveries++
			if rc.NextAcquireMs == nil {
				c.RecoveryNever++
			} else {
				rec = append(rec, *rc.NextAcquireMs)
			}
		}
	}
	switch {
	case c.Unsafe > 0:
		c.Outcome = Unsafe
	case c.Unknown > 0:
		c.Outcome = Undecided
	default:
		c.Outcome = Safe
	}
	c.AcquireP50Ms, c.AcquireP99Ms = median(p50), median(p99)
	c.Throughput, c.CommandsPerAcquisition = median(tput), median(cmds)
	if len(rec) > 0 {
		v := median(rec)
		c.RecoveryMs = &v
	}
	return c
}

// decider is the check that gave the run its verdict.
func (r Results) decider() checker.Result {
	if r.DecidedBy == checker.MutexCheck {
		return r.Checks.Mutex
	}
	return r.Checks.Resource
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Cell returns the cell of a design under a fault.
func (m Matrix) Cell(design, fault string) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Design == design && c.Fault == fault {
			return c, true
		}
	}
	return Cell{}, false
}

// Lines says a cell in short lines, shared by every format.
func (c Cell) Lines() []string {
	verdict := string(c.Outcome)
	if c.Runs > 1 {
		verdict += fmt.Sprintf(" (%d/%d runs)", map[Outcome]int{Safe: c.Safe, Unsafe: c.Unsafe, Undecided: c.Unknown}[c.Outcome], c.Runs)
	}
	lines := []string{verdict}
	var v string
	if c.Workload == "counter" || c.LostUpdates > 0 {
		v = fmt.Sprintf("%d lost", c.LostUpdates)
	}
	if c.FirstViolationS != nil {
		v = strings.TrimPrefix(v+fmt.Sprintf(", first at %.1f s", *c.FirstViolationS), ", ")
	}
	if c.Outcome == Safe && c.MutexUnsafe > 0 {
		v = strings.TrimPrefix(v+", two holders seen", ", ")
	}
	if v != "" {
		lines = append(lines, v)
	}
	lines = append(lines,
		fmt.Sprintf("acquire p50 %s / p99 %s", fmtMs(c.AcquireP50Ms), fmtMs(c.AcquireP99Ms)),
		fmt.Sprintf("%.1f acq/s, %.1f cmds/acq", c.Throughput, c.CommandsPerAcquisition))
	if c.Recoveries > 0 {
		r := "next acquire: never"
		if c.RecoveryMs != nil {
			r = "next acquire " + fmtMs(*c.RecoveryMs) + " after fault"
		}
		if c.RecoveryNever > 0 && c.RecoveryMs != nil {
			r += fmt.Sprintf(" (%d of %d: none)", c.RecoveryNever, c.Recoveries)
		}
		lines = append(lines, r)
	}
	return lines
}

func fmtMs(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.1f ms", ms)
	}
}

var outcomeMark = map[Outcome]string{Safe: "✅", Unsafe: "❌", Undecided: "❔"}

// Markdown writes the matrix as a table that fits a CI job summary.
func (m Matrix) Markdown(w io.Writer) {
	fmt.Fprintf(w, "## locktest: %d design(s) × %d fault(s)\n\n", len(m.Designs), len(m.Faults))
	fmt.Fprintf(w, "| design \\ fault | %s |\n|---|%s\n", strings.Join(m.Faults, " | "), strings.Repeat("---|", len(m.Faults)))
	for _, d := range m.Designs {
		fmt.Fprintf(w, "| **%s** |", d)
		for _, f := range m.Faults {
			c, ok := m.Cell(d, f)
			if !ok {
				fmt.Fprint(w, " — |")
				continue
			}
			lines := c.Lines()
			lines[0] = outcomeMark[c.Outcome] + " **" + lines[0] + "**"
			fmt.Fprintf(w, " %s |", strings.Join(lines, "<br>"))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nEach cell: verdict of the check the workload decides by; lost updates and the time of the first violation; "+
		"acquire latency p50/p99; acquisitions per second and store commands per acquisition; "+
		"median time from a fault (holder paused or killed) to the next acquisition by another client. "+
		"With several runs, the figures are medians over runs.")
	var repro []string
	for _, c := range m.Cells {
		if c.Outcome != Safe {
			repro = append(repro, fmt.Sprintf("- %s under %s (%s): `%s`", c.Design, c.Fault, c.Outcome, c.Command))
		}
	}
	if len(repro) > 0 {
		fmt.Fprintf(w, "\nReproduce:\n\n%s\n", strings.Join(repro, "\n"))
	}
	for _, n := range m.Notes {
		fmt.Fprintf(w, "\n> %s\n", n)
	}
}

// Files written by WriteComparison.
const (
	CompareHTML     = "compare.html"
	CompareMarkdown = "compare.md"
	CompareJSON     = "compare.json"
	ComparePNG      = "compare.png"
)

// WriteComparison writes the matrix into dir as HTML (with the chart),
// Markdown, JSON and the chart as PNG.
func WriteComparison(dir string, m Matrix) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	png, err := m.chart().render("png")
	if err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	errs := []error{
		os.WriteFile(filepath.Join(dir, ComparePNG), png, 0o644),
		os.WriteFile(filepath.Join(dir, CompareJSON), append(data, '\n'), 0o644),
		writeFile(filepath.Join(dir, CompareMarkdown), func(w io.Writer) error { m.Markdown(w); return nil }),
		writeFile(filepath.Join(dir, CompareHTML), func(w io.Writer) error { return m.html(w, dir, png) }),
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}
