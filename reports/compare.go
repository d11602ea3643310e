package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
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
			if _, err := os.Stat(filepath.Join(dir, EnvelopeFile)); err == nil {
				return fs.SkipDir // a sweep's runs: LoadEnvelopes reads it
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
				notes = append(notes, fmt.Sprintf("%s has a history but no results (a run in progress, or killed: locktest analyze %s)", dir, dir))
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

// Setting is a knob of a run that changes what the run does (scenario.Settings
// says which). Runs that differ in one are never summarized together: a
// verdict over persisted and unpersisted servers, or a median over two
// TTLs, describes no run anyone made.
type Setting struct {
	// Name is the setting's key in the run's config.json.
	Name string
	// Flag spells the setting in column labels, as locktest run's option.
	Flag string
}

// Cell summarizes the runs of one design under one fault with the same
// settings.
type Cell struct {
	Design string `json:"design"`
	Fault  string `json:"fault"`
	// Variant names the settings that set these runs apart from the
	// design's other runs under the fault ("persist"), if it has any.
	Variant string `json:"variant,omitempty"`
	// Settings are the runs' compared settings by name; unset ones ("",
	// false) are left out.
	Settings map[string]string `json:"settings,omitempty"`
	// Outcome is unsafe if any run was, else unknown if any run was, else
	// safe: one counterexample is enough.
	Outcome  Outcome `json:"outcome"`
	Runs     int     `json:"runs"`
	Safe     int     `json:"safe_runs"`
	Unsafe   int     `json:"unsafe_runs"`
	Unknown  int     `json:"unknown_runs"`
	Workload string  `json:"workload"`
	// UnsafeLow and UnsafeHigh bound the rate of unsafe runs among the
	// decided ones (95% Wilson interval): two runs out of two say less
	// than twenty out of twenty, and the bounds say how much less.
	UnsafeLow  float64 `json:"unsafe_rate_low"`
	UnsafeHigh float64 `json:"unsafe_rate_high"`
	// MutexUnsafe counts runs in which two clients believed they held the
	// lock at once: for a fenced design the data can be safe regardless.
	MutexUnsafe int `json:"mutex_unsafe_runs"`
	LostUpdates int `json:"lost_updates"`
	// Rejected counts critical sections the resource refused (a stale
	// token, a version that moved): wasted work, never lost, of Sections,
	// the critical sections that got as far as a verdict on their write.
	Rejected int `json:"rejected"`
	Sections int `json:"sections"`
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

// Matrix is the comparison of designs (rows) under faults (columns). A
// fault has a column for each variant some design ran it with.
type Matrix struct {
	// Envelopes, when sweeps were found, are the comparison's headline:
	// how big a fault each design survived.
	Envelopes Envelopes `json:"envelopes"`
	Designs   []string  `json:"designs"`
	Columns   []Column  `json:"columns"`
	Cells     []Cell    `json:"cells"`
	Notes     []string  `json:"notes,omitempty"`
}

// NewMatrix groups runs by design, fault and the values of settings. When
// the runs mix workloads the design label names the workload too, since a
// verdict means different things for each. When a design ran a fault
// with several setting groups, each gets its own column, labelled by the
// settings in which the groups differ.
func NewMatrix(runs []Results, settings []Setting) Matrix {
	workloads := map[string]bool{}
	for _, r := range runs {
		workloads[r.Workload] = true
	}
	type pair struct{ design, fault string }
	type group struct {
		values []string
		runs   []Results
	}
	groups := map[pair][]*group{}
	var pairs []pair
	for _, r := range runs {
		k := pair{r.DesignName(), strings.Join(r.Faults, "+")}
		if len(workloads) > 1 {
			k.design += " (" + r.Workload + ")"
		}
		values := settingValues(r, settings)
		i := slices.IndexFunc(groups[k], func(g *group) bool { return slices.Equal(g.values, values) })
		if i < 0 {
			if len(groups[k]) == 0 {
				pairs = append(pairs, k)
			}
			groups[k] = append(groups[k], &group{values: values})
			i = len(groups[k]) - 1
		}
		groups[k][i].runs = append(groups[k][i].runs, r)
	}
	var m Matrix
	for _, k := range pairs {
		gs := groups[k]
		values := make([][]string, len(gs))
		for i, g := range gs {
			values[i] = g.values
		}
		for i, g := range gs {
			c := newCell(k.design, k.fault, g.runs)
			c.Variant = variant(settings, values, i)
			c.Settings = map[string]string{}
			for j, s := range settings {
				if v := g.values[j]; v != "" {
					c.Settings[s.Name] = v
				}
			}
			m.Cells = append(m.Cells, c)
			if !slices.Contains(m.Designs, k.design) {
				m.Designs = append(m.Designs, k.design)
			}
			if !slices.Contains(m.Columns, c.Column()) {
				m.Columns = append(m.Columns, c.Column())
			}
		}
	}
	sort.Strings(m.Designs)
	sort.Slice(m.Columns, func(i, j int) bool {
		a, b := m.Columns[i], m.Columns[j]
		if (a.Fault == "none") != (b.Fault == "none") {
			return a.Fault == "none" // the control column first
		}
		if a.Fault != b.Fault {
			return a.Fault < b.Fault
		}
		return a.Variant < b.Variant // the plain variant first
	})
	sort.SliceStable(m.Cells, func(i, j int) bool {
		a, b := m.Cells[i], m.Cells[j]
		if a.Design != b.Design {
			return a.Design < b.Design
		}
		return slices.Index(m.Columns, a.Column()) < slices.Index(m.Columns, b.Column())
	})
	return m
}

// settingValues are the run's values of settings, as text: the key's
// JSON value, a string unquoted, a list joined by commas, and "" for a
// setting that is unset (absent, "", false or null), so that a run
// written before a setting existed groups with runs that leave it unset.
func settingValues(r Results, settings []Setting) []string {
	var cfg map[string]json.RawMessage
	if data, err := json.Marshal(r.Config); err == nil {
		_ = json.Unmarshal(data, &cfg) // a config that is no object sets nothing
	}
	out := make([]string, len(settings))
	for i, s := range settings {
		var v any
		if err := json.Unmarshal(cfg[s.Name], &v); err != nil {
			continue
		}
		switch v := v.(type) {
		case string:
			out[i] = v
		case bool:
			if v {
				out[i] = "true"
			}
		case []any:
			parts := make([]string, len(v))
			for j, e := range v {
				parts[j] = fmt.Sprint(e)
			}
			out[i] = strings.Join(parts, ",")
		case nil:
		default:
			out[i] = string(cfg[s.Name])
		}
	}
	return out
}

// variant names setting group i of a design under a fault by the
// settings in which values (all the groups' values, in settings order)
// differ: "persist" for a flag that is on, nothing for one that is off,
// "ttl=2s" for others, and a -min/-max pair as one range, "hold=1.5s–1.8s".
// One group alone needs no name.
func variant(settings []Setting, values [][]string, i int) string {
	differs := func(j int) bool {
		return slices.ContainsFunc(values, func(vs []string) bool { return vs[j] != values[0][j] })
	}
	var parts []string
	for j, s := range settings {
		v := values[i][j]
		if base, ok := strings.CutSuffix(s.Flag, "-min"); ok {
			if k := slices.IndexFunc(settings, func(t Setting) bool { return t.Flag == base+"-max" }); k >= 0 {
				if differs(j) || differs(k) {
					parts = append(parts, base+"="+rangeText(v, values[i][k]))
				}
				continue
			}
		}
		if base, ok := strings.CutSuffix(s.Flag, "-max"); ok && slices.ContainsFunc(settings, func(t Setting) bool { return t.Flag == base+"-min" }) {
			continue // said with its -min
		}
		switch {
		case !differs(j) || v == "":
		case v == "true":
			parts = append(parts, s.Flag)
		default:
			parts = append(parts, s.Flag+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

// Column is a fault, or a variant of it: the fault run with settings that
// differ from a design's other runs of it.
type Column struct {
	Fault   string `json:"fault"`
	Variant string `json:"variant,omitempty"`
}

// String is the column's heading: "kill-node (persist)".
func (c Column) String() string {
	if c.Variant == "" {
		return c.Fault
	}
	return c.Fault + " (" + c.Variant + ")"
}

// Column is the column the cell sits in.
func (c Cell) Column() Column { return Column{c.Fault, c.Variant} }

func rangeText(lo, hi string) string {
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
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
		c.Rejected += r.Checks.Stats.Rejected
		c.Sections += r.Checks.Stats.Acknowledged + r.Checks.Stats.Rejected
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
	c.UnsafeLow, c.UnsafeHigh = wilson(c.Unsafe, c.Safe+c.Unsafe)
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

// wilson is the 95% Wilson score interval of a rate seen k times in n
// trials. Unlike k/n ± 1.96 standard errors it stays within [0, 1] and
// is not a single point at k = 0 or k = n, which is where a handful of
// runs usually lands. No trial says nothing: [0, 1].
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054 // the 97.5th percentile of the normal distribution
	nf, p := float64(n), float64(k)/float64(n)
	d := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / d
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return max(0, center-half), min(1, center+half)
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

// Cell returns the cell of a design in a column.
func (m Matrix) Cell(design string, column Column) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Design == design && c.Column() == column {
			return c, true
		}
	}
	return Cell{}, false
}

// Lines says a cell in short lines, shared by every format: the verdict,
// its safety facts, then the performance figures.
func (c Cell) Lines() []string {
	lines := []string{string(c.Outcome)}
	for _, phrases := range c.safetyFacts() {
		lines = append(lines, strings.Join(phrases, ", "))
	}
	lines = append(lines,
		fmt.Sprintf("acquire p50 %s / p99 %s", fmtMs(c.AcquireP50Ms), fmtMs(c.AcquireP99Ms)),
		fmt.Sprintf("%.1f acq/s, %s cmds/acq", c.Throughput, orDash(c.CommandsPerAcquisition)))
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

// safetyFacts say how safe the cell's runs were, as groups of short
// phrases: how many runs were unsafe and the 95% interval of the rate;
// the lost updates, the first violation and holders the data survived.
// A line of a table joins a group with commas; the chart, short of room,
// gives each phrase a line.
func (c Cell) safetyFacts() [][]string {
	rate := []string{"no run decided"}
	if n := c.Safe + c.Unsafe; n > 0 {
		rate = []string{fmt.Sprintf("%d/%d runs unsafe", c.Unsafe, n),
			fmt.Sprintf("95%% CI %.0f–%.0f%%", 100*c.UnsafeLow, 100*c.UnsafeHigh)}
	}
	if c.Unknown > 0 {
		rate = append(rate, fmt.Sprintf("%d unknown", c.Unknown))
	}
	var v []string
	if c.Workload == "counter" || c.LostUpdates > 0 {
		v = append(v, fmt.Sprintf("%d lost", c.LostUpdates))
	}
	if c.Rejected > 0 {
		v = append(v, fmt.Sprintf("%.2g wasted per 100 sections", 100*float64(c.Rejected)/float64(c.Sections)))
	}
	if c.FirstViolationS != nil {
		v = append(v, fmt.Sprintf("first at %.1f s", *c.FirstViolationS))
	}
	if c.Outcome == Safe && c.MutexUnsafe > 0 {
		v = append(v, "two holders seen")
	}
	if len(v) == 0 {
		return [][]string{rate}
	}
	return [][]string{rate, v}
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

// cellLegend explains a cell, under every format's table.
const cellLegend = "Each cell: verdict of the check the workload decides by; runs unsafe of the runs decided, with the 95% " +
	"(Wilson) interval of the unsafe rate; lost updates and the time of the first violation; acquire latency p50/p99; " +
	"acquisitions per second and store commands per acquisition; median time from a fault (holder paused or killed) " +
	"to the next acquisition by another client. A cell holds only runs with the same settings (seeds aside); with " +
	"several runs the figures are medians over them. A fault run with different settings has a column for each, " +
	"named by the settings that differ."

// Markdown writes the envelopes, then the matrix, as tables that fit a CI
// job summary.
func (m Matrix) Markdown(w io.Writer) {
	m.Envelopes.Markdown(w)
	if len(m.Cells) == 0 {
		return
	}
	fmt.Fprintf(w, "## locktest: %d design(s) × %d fault column(s)\n\n", len(m.Designs), len(m.Columns))
	heads := make([]string, len(m.Columns))
	for i, col := range m.Columns {
		heads[i] = col.String()
	}
	markdownTable(w, m.Designs, heads, func(design string, i int) string {
		c, ok := m.Cell(design, m.Columns[i])
		if !ok {
			return "—"
		}
		lines := c.Lines()
		for i, l := range lines {
			lines[i] = mdText(l)
		}
		lines[0] = outcomeMark[c.Outcome] + " **" + lines[0] + "**"
		return strings.Join(lines, "<br>")
	})
	fmt.Fprintln(w, "\n"+cellLegend)
	var repro []string
	for _, c := range m.Cells {
		if c.Outcome != Safe {
			repro = append(repro, fmt.Sprintf("- %s under %s (%s): %s", mdText(c.Design), mdText(c.Column().String()), c.Outcome,
				mdCode(c.Command)))
		}
	}
	if len(repro) > 0 {
		fmt.Fprintf(w, "\nReproduce:\n\n%s\n", strings.Join(repro, "\n"))
	}
	for _, n := range m.Notes {
		fmt.Fprintf(w, "\n> %s\n", mdText(n))
	}
}

// markdownTable writes a designs × columns table, each cell as cell says
// (Markdown, one line, its texts escaped by mdText); the designs and heads
// are escaped here.
func markdownTable(w io.Writer, designs, heads []string, cell func(design string, column int) string) {
	escaped := make([]string, len(heads))
	for i, h := range heads {
		escaped[i] = mdText(h)
	}
	fmt.Fprintf(w, "| design \\ fault | %s |\n|---|%s\n", strings.Join(escaped, " | "), strings.Repeat("---|", len(heads)))
	for _, d := range designs {
		fmt.Fprintf(w, "| **%s** |", mdText(d))
		for i := range heads {
			fmt.Fprintf(w, " %s |", cell(d, i))
		}
		fmt.Fprintln(w)
	}
}

// mdSpecial replaces what Markdown (GitHub's included) reads as markup
// or raw HTML, and the newlines that would end a table row: names, notes
// and settings come from configs and histories, and a job summary renders
// raw HTML.
var mdSpecial = func() *strings.Replacer {
	var pairs []string
	for _, c := range "\\`*_[]|<>&~" {
		pairs = append(pairs, string(c), "\\"+string(c))
	}
	return strings.NewReplacer(append(pairs, "\r\n", " ", "\n", " ", "\r", " ")...)
}()

// mdText is s as literal Markdown text.
func mdText(s string) string { return mdSpecial.Replace(s) }

// mdCode is s as a Markdown code span, whose text is literal: fenced by
// more backticks than s has in a row, on one line.
func mdCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// Files written by WriteComparison.
const (
	CompareHTML     = "compare.html"
	CompareMarkdown = "compare.md"
	CompareJSON     = "compare.json"
	ComparePNG      = "compare.png"
	EnvelopesPNG    = "envelopes.png"
)

// WriteComparison writes the matrix into dir as HTML (with the chart),
// Markdown, JSON and the chart as PNG.
func WriteComparison(dir string, m Matrix) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	files, err := ComparisonFiles(dir, m)
	if err != nil {
		return err
	}
	var errs []error
	for name, data := range files {
		errs = append(errs, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// ComparisonFiles renders the files of WriteComparison, by name, for
// compare.html to be found in dir (its links to the runs' reports are
// relative to dir): locktest serve renders them for a store on request and
// writes nothing.
func ComparisonFiles(dir string, m Matrix) (map[string][]byte, error) {
	ch, err := m.chart()
	if err != nil {
		return nil, fmt.Errorf("render comparison: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render comparison: %w", err)
	}
	var curves chart
	if curves.png, curves.width, curves.height, err = m.Envelopes.Chart(); err != nil {
		return nil, fmt.Errorf("render comparison: %w", err)
	}
	var md, page bytes.Buffer
	m.Markdown(&md)
	if err := m.html(&page, dir, ch, curves); err != nil {
		return nil, fmt.Errorf("render comparison: %w", err)
	}
	files := map[string][]byte{ComparePNG: ch.png, CompareJSON: append(data, '\n'),
		CompareMarkdown: md.Bytes(), CompareHTML: page.Bytes()}
	if curves.png != nil {
		files[EnvelopesPNG] = curves.png
	}
	return files, nil
}

// orDash shows a per-acquisition count, or "—" for none: a design that
// reports no store commands (a library, a program that leaves cmds out)
// has no figure, not a cost of zero.
func orDash(v float64) string {
	if v == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", v)
}
