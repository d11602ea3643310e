package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// Files a suite's --out directory holds besides runs/.
const (
	ReportFile  = "suite.json"
	SummaryFile = "summary.md"
	JUnitFile   = "junit.xml"
	RunsDir     = "runs"
)

// row aggregates the runs of one scenario.
type row struct {
	name, rows, impl, faults, expected string
	unmeasured                         bool
	runs, pass, fail, errs, notRun     int
	safe, unsafe, undecided            int
	wall                               float64
}

func (r Report) rows() []*row {
	var out []*row
	by := map[string]*row{}
	for _, o := range r.Outcomes {
		rw := by[o.Scenario]
		if rw == nil {
			rw = &row{name: o.Scenario, rows: strings.Join(o.Anomalies, ", "), impl: o.Impl,
				faults: strings.Join(o.Faults, "+"), expected: o.Expected, unmeasured: o.Unmeasured}
			by[o.Scenario] = rw
			out = append(out, rw)
		}
		rw.runs++
		rw.wall += o.WallSeconds
		switch o.Status {
		case Pass:
			rw.pass++
		case Fail:
			rw.fail++
		case Errored:
			rw.errs++
		case NotRun:
			rw.notRun++
		}
		if o.Status == Pass || o.Status == Fail {
			switch reports.OutcomeOf(o.Verdict) {
			case reports.Safe:
				rw.safe++
			case reports.Unsafe:
				rw.unsafe++
			default:
				rw.undecided++
			}
		}
	}
	return out
}

// result says how the scenario's runs went, e.g. "unsafe 10/10".
func (rw *row) result() string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{rw.unsafe, string(reports.Unsafe)}, {rw.safe, string(reports.Safe)}, {rw.undecided, string(reports.Undecided)},
		{rw.errs, "error"}, {rw.notRun, "not run"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", c.what, c.n, rw.runs))
		}
	}
	return strings.Join(parts, ", ")
}

func (rw *row) status() Status {
	switch {
	case rw.fail > 0:
		return Fail
	case rw.errs > 0:
		return Errored
	case rw.notRun > 0:
		return NotRun
	}
	return Pass
}

// headline is the suite's outcome in one line.
func (r Report) headline() string {
	var pass int
	for _, o := range r.Outcomes {
		if o.Status == Pass {
			pass++
		}
	}
	word, part, missing := "PASSED", "", ""
	switch {
	case r.Interrupted:
		word = "INTERRUPTED"
	case len(r.Missing) > 0:
		word = "INCOMPLETE"
	case !r.Passed():
		word = "FAILED"
	}
	var sweeps string
	if n := len(r.Envelopes); n > 0 {
		done := 0
		for _, e := range r.Envelopes {
			if e.Status == Pass {
				done++
			}
		}
		sweeps = fmt.Sprintf(", %d/%d envelopes measured", done, n)
	}
	switch {
	case r.Shard != nil:
		part = " shard " + r.Shard.String()
	case len(r.Merged) > 0:
		part = fmt.Sprintf(" (%d shard outputs merged)", len(r.Merged))
	}
	if len(r.Missing) > 0 {
		var names []string
		for _, m := range r.Missing {
			names = append(names, strconv.Itoa(m))
		}
		missing = fmt.Sprintf("; shard(s) %s of %d missing, their runs not counted", strings.Join(names, ", "), len(r.Merged)+len(r.Missing))
	}
	return fmt.Sprintf("suite %s%s %s: %d/%d runs as expected%s in %s (parallel %d)%s", r.Suite, part, word, pass,
		len(r.Outcomes), sweeps, time.Duration(r.WallSeconds*float64(time.Second)).Round(time.Second), r.Parallel, missing)
}

// Print writes the suite's result table and every failure's reproducing
// command.
func (r Report) Print(w io.Writer) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tscenario\texpected\tresult\twall")
	for _, rw := range r.rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0fs\n", strings.ToUpper(string(rw.status())), rw.name, rw.expected, rw.result(), rw.wall)
	}
	tw.Flush()
	for _, o := range r.Outcomes {
		if o.Status == Fail || o.Status == Errored {
			fmt.Fprintln(w, resultLine(o))
		}
	}
	for _, e := range r.Envelopes {
		fmt.Fprintf(w, "%-6s %s: %s (%d runs, %.0fs)\n", strings.ToUpper(string(e.Status)), e.Name, orNothing(e.Result+e.Error), e.Runs, e.WallSeconds)
	}
	fmt.Fprintln(w, r.headline())
	fmt.Fprintf(w, "reports   %s, %s, %s in %s\n", SummaryFile, JUnitFile, ReportFile, r.Out)
}

// Write writes suite.json, junit.xml, the designs × faults comparison of
// the finished runs (compare.html, .png, .md, .json) and summary.md: the
// suite's table, its failures and the comparison, in Markdown for a CI job
// summary. They go into dir: r.Out, or a directory a merge renames to
// r.Out once every file is written. The comparison's links to the runs
// are relative to dir, so a temporary dir must lie beside r.Out.
func (r Report) Write(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write suite report: %w", err)
	}
	errs := []error{os.WriteFile(filepath.Join(dir, ReportFile), append(data, '\n'), 0o644)}
	var md strings.Builder
	r.markdown(&md)
	var dirs []string
	for _, o := range r.Outcomes {
		if o.Status == Pass || o.Status == Fail {
			dirs = append(dirs, o.Dir)
		}
	}
	var sweepDirs []string
	for _, e := range r.Envelopes {
		if e.Status == Pass {
			sweepDirs = append(sweepDirs, e.Dir)
		}
	}
	if len(dirs)+len(sweepDirs) > 0 {
		m, err := reports.Compare(append(dirs, sweepDirs...), scenario.ComparedSettings(), false)
		if err == nil {
			err = reports.WriteComparison(dir, m)
			fmt.Fprintln(&md)
			m.Markdown(&md)
		}
		errs = append(errs, err)
	}
	errs = append(errs, os.WriteFile(filepath.Join(dir, SummaryFile), []byte(md.String()), 0o644))
	f, err := os.Create(filepath.Join(dir, JUnitFile))
	if err == nil {
		err = reports.WriteJUnit(f, reports.Suite{Name: "locktest suite " + r.Suite, Timestamp: r.Started, Cases: r.junit()})
		err = errors.Join(err, f.Close())
	}
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write suite report: %w", err)
	}
	return nil
}

func (r Report) markdown(w io.Writer) {
	fmt.Fprintf(w, "## locktest %s\n\n", r.headline())
	if len(r.Merged) > 0 {
		fmt.Fprintf(w, "Merged from `%s`.\n\n", strings.Join(r.Merged, "`, `"))
	}
	fmt.Fprintf(w, "Suite file `%s`. The verdict is the check of what the workload protects; *unsafe* means lost updates (counter) or two holders (mutex).\n\n", r.File)
	fmt.Fprintln(w, "| | scenario | docs/anomalies.md row | impl | faults | expected | result | wall |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	icon := map[Status]string{Pass: "✅", Fail: "❌", Errored: "⚠️", NotRun: "⏹"}
	for _, rw := range r.rows() {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.0fs |\n", icon[rw.status()], rw.name, rw.rows,
			rw.impl, rw.faults, rw.expected, rw.result(), rw.wall)
	}
	r.sweeps(w)
	r.failures(w)
	r.unmeasured(w)
}

// sweeps lists the envelopes block's sweeps: each one's boundary, or why
// it has none.
func (r Report) sweeps(w io.Writer) {
	if len(r.Envelopes) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Envelopes\n\n| | sweep | impl | fault | grows | result | runs | wall |\n|---|---|---|---|---|---|---|---|\n")
	icon := map[Status]string{Pass: "✅", Fail: "❌", Errored: "⚠️", NotRun: "⏹"}
	for _, e := range r.Envelopes {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d | %.0fs |\n", icon[e.Status], e.Name, e.Impl, e.Fault, e.Vary,
			orNothing(e.Result+e.Error), e.Runs, e.WallSeconds)
	}
}

// failures lists every run that did not match its expectation, with the
// command that reproduces it.
func (r Report) failures(w io.Writer) {
	var bad []Outcome
	for _, o := range r.Outcomes {
		if o.Status == Fail || o.Status == Errored {
			bad = append(bad, o)
		}
	}
	if len(bad) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Failures\n")
	for _, o := range bad {
		fmt.Fprintf(w, "\n**%s seed %d**: expected %s, got %s\n\n", o.Scenario, o.Seed, o.Expected, orNothing(o.Got))
		for _, why := range append(o.Reasons, o.Error) {
			if why != "" {
				fmt.Fprintf(w, "- %s\n", why)
			}
		}
		fmt.Fprintf(w, "\nreproduce:\n\n```\n%s\n```\n", o.Command)
		if o.Dir != "" {
			fmt.Fprintf(w, "run directory: `%s`\n", o.Dir)
		}
	}
}

// unmeasured lists the matrix cells that ran at the matrix's default
// expectation: what is left to measure before the suite promises anything
// about them.
func (r Report) unmeasured(w io.Writer) {
	var names []string
	var expected string
	rows := r.rows()
	for _, rw := range rows {
		if rw.unmeasured {
			names = append(names, "`"+rw.name+"`")
			expected = rw.expected
		}
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Unmeasured\n\n%d of %d scenarios are matrix cells at the matrix's default expectation (%s): "+
		"nothing says what they must show. To pin one, add a scenario of its name, impl and fault with the expectation measured.\n\n%s\n",
		len(names), len(rows), expected, strings.Join(names, ", "))
}

func orNothing(s string) string {
	if s == "" {
		return "no verdict"
	}
	return s
}

// junit makes a test case of each run. A suite's expectation says more
// than one outcome (the mutex check, a recovery bound), so a case carries
// the suite's own judgement: Actual is the expectation when the run
// matched it, and what the run showed when it did not.
func (r Report) junit() []reports.TestCase {
	var cases []reports.TestCase
	for _, o := range r.Outcomes {
		c := reports.TestCase{Scenario: fmt.Sprintf("%s seed %d", o.Scenario, o.Seed), Group: r.Suite,
			Expected: reports.Outcome(o.Expected), Actual: reports.Outcome(o.Expected), Command: o.Command,
			Duration: time.Duration(o.WallSeconds * float64(time.Second)), RunDir: o.Dir,
			Details: strings.Join(o.Reasons, "\n")}
		switch o.Status {
		case Fail:
			c.Actual = reports.Outcome(o.Got)
		case Errored:
			c.Err = o.Error
		case NotRun:
			c.Err = "not run to its end: the suite was interrupted"
		}
		cases = append(cases, c)
	}
	// A missing shard is an error of its own, so that a CI page showing
	// only the JUnit cases does not pass an incomplete suite.
	for _, m := range r.Missing {
		cases = append(cases, reports.TestCase{Scenario: fmt.Sprintf("shard %d of %d", m, len(r.Merged)+len(r.Missing)),
			Group: r.Suite, Err: "missing: its output was not given to locktest suite merge, so its runs are not counted"})
	}
	return cases
}
