package reports

import (
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
)

//go:embed report.html.tmpl
var reportTemplate string

// plotFile is one rendered plot: written beside the report and embedded in
// it, so that report.html alone (mailed, attached to a CI job) shows it.
type plotFile struct {
	ID, Title, Caption string
	PNG, SVG           string // file names in the run directory
	png                []byte
	Width              int
}

func (p plotFile) DataURI() template.URL {
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(p.png))
}

type checkRow struct {
	Result   checker.Result
	Question string
	Viz      string
	Class    string
}

type faultRow struct {
	history.Fault
	LastedMs float64
	// NextAcquire is when another client next acquired the lock; "—" when
	// the results hold no recovery for the fault.
	NextAcquire string
	Effect      *checker.FaultEffect // nil in results written before efficacy was judged
}

// page is what report.html.tmpl renders.
type page struct {
	R            Results
	Outcome      Outcome
	Headline     string
	Notes        []string
	Checks       []checkRow
	Plots        []plotFile
	Faults       []faultRow
	HasResource  bool
	AnyViolation bool
	Files        struct{ Mutex, Resource, History, Results, Summary, Workers, Nodes string }
}

func newPage(r Results, plots []plotFile) page {
	p := page{R: r, Outcome: OutcomeOf(r.Verdict), Plots: plots, Notes: r.Notes,
		HasResource: r.DecidedBy == checker.ResourceCheck || r.Checks.Resource.Ops > 0}
	if r.Truncated && !r.hasTruncationNote() {
		p.Notes = append([]string{"the history was truncated (killed run): the complete prefix was checked"}, p.Notes...)
	}
	if r.Interrupted {
		p.Notes = append(p.Notes, "the run was interrupted before its end")
	}
	p.Files.Mutex, p.Files.Resource, p.Files.History = MutexViz, ResourceViz, HistoryFile
	p.Files.Results, p.Files.Summary, p.Files.Workers, p.Files.Nodes = ResultsFile, SummaryFile, WorkerLogDir, NodeLogsDir
	p.Checks = []checkRow{
		{r.Checks.Mutex, "did two clients believe they held the lock at once?", MutexViz, string(OutcomeOf(r.Checks.Mutex.Verdict))},
	}
	if p.HasResource {
		p.Checks = append(p.Checks, checkRow{r.Checks.Resource, "did every critical section's update survive?", ResourceViz,
			string(OutcomeOf(r.Checks.Resource.Verdict))})
	}
	for _, c := range p.Checks {
		p.AnyViolation = p.AnyViolation || len(c.Result.Violations) > 0
	}
	for i, f := range r.Checks.Faults {
		row := faultRow{Fault: f, LastedMs: float64(f.Stop-f.Start) / 1e6, NextAcquire: "—"}
		if i < len(r.Metrics.Recoveries) {
			row.NextAcquire = recoveryText(r.Metrics.Recoveries[i])
		}
		if i < len(r.Checks.Efficacy) {
			row.Effect = &r.Checks.Efficacy[i]
		}
		p.Faults = append(p.Faults, row)
	}
	p.Headline = Headline(r)
	return p
}

// Headline says the verdict in one sentence a reader can act on.
func Headline(r Results) string {
	h := headline(r)
	if r.Unexercised() {
		h += " But no fault took effect: the run never created the conditions it tests."
	}
	return h
}

func headline(r Results) string {
	c := r.Checks
	mutexBroken := c.Mutex.Verdict == checker.Invalid
	switch {
	case r.Verdict == checker.Unknown:
		return "the checker could not decide: " + firstNonEmpty(c.Mutex.Note, c.Resource.Note, "see the checks below")
	case r.DecidedBy == checker.ResourceCheck && r.Verdict == checker.Invalid:
		return fmt.Sprintf("%d update(s) of the protected resource were lost.", c.Stats.Lost)
	case r.DecidedBy == checker.ResourceCheck && mutexBroken:
		return fmt.Sprintf("no update was lost, although two clients believed they held the lock at once (%d stale write(s) rejected).",
			c.Stats.Rejected)
	case r.DecidedBy == checker.ResourceCheck:
		return "no update was lost and the lock kept mutual exclusion."
	case r.Verdict == checker.Invalid:
		return "two clients believed they held the lock at once."
	default:
		return "the lock kept mutual exclusion."
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func (r Results) hasTruncationNote() bool {
	for _, n := range r.Notes {
		if strings.Contains(n, "truncated") || strings.Contains(n, "cut off") {
			return true
		}
	}
	return false
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"upper": func(v any) string { return strings.ToUpper(fmt.Sprint(v)) },
	"join":  strings.Join,
}).Parse(reportTemplate))

// Secs shows a history time as seconds since the start of the run.
func (p page) Secs(ns int64) string { return fmt.Sprintf("%.3f s", float64(ns-p.R.Checks.Start)/1e9) }

// Ret shows a return time; an info op has none.
func (p page) Ret(ns int64) string {
	if ns == history.Never {
		return "unknown (info)"
	}
	return p.Secs(ns)
}

// Seconds shows an optional duration in seconds; nil is a dash.
func (p page) Seconds(s *float64) string {
	if s == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f s", *s)
}

// writeHTML renders report.html.
func writeHTML(w io.Writer, r Results, plots []plotFile) error {
	return reportTmpl.Execute(w, newPage(r, plots))
}
