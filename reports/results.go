package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
)

// Results is everything known about one run; it is written as
// results.json and is what compare and analyze read back.
type Results struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	// Design is the name the design goes by when it is not Impl: the
	// user's name for their program (--exec-name).
	Design   string   `json:"design,omitempty"`
	Workload string   `json:"workload"`
	Faults   []string `json:"faults"`
	Seed     int64    `json:"seed"`
	Clients  int      `json:"clients"`
	// Network is what made the run's links: "netns" (the kernel, in the
	// run's namespaces) or "proxy"; a verdict on a partition depends on it.
	Network string `json:"network,omitempty"`
	// Command reproduces the run.
	Command string          `json:"command"`
	Config  any             `json:"config"`
	Dir     string          `json:"dir"`
	Verdict checker.Verdict `json:"verdict"`
	// DecidedBy names the check that gave the verdict.
	DecidedBy string `json:"decided_by"`
	// Checks holds the verdicts and, in Checks.Efficacy (checks.efficacy),
	// whether each fault took effect.
	Checks  checker.Report  `json:"checks"`
	Metrics checker.Metrics `json:"metrics"`
	Records int             `json:"records"`
	// Truncated: the history's last line was cut (a killed run).
	Truncated bool `json:"truncated,omitempty"`
	// Interrupted: the run was stopped before its end.
	Interrupted bool `json:"interrupted,omitempty"`
	// BrokenClients counts the lock clients that broke and stopped during
	// the run (a program that hung past its deadline, or died): a run
	// whose checks passed is then unknown, since the clients did not do
	// what was asked of them.
	BrokenClients int      `json:"broken_clients,omitempty"`
	Notes         []string `json:"notes,omitempty"`
	// Health says whether the harness kept the timing it was asked for;
	// nil for a history without the coordinator's run marks.
	Health *Health `json:"health,omitempty"`
	// Locktest is the build that checked the history.
	Locktest Build `json:"locktest"`
	// Servers are the versions of the servers the design runs on, by
	// name, as installed when the history was checked; none when the
	// lock servers were the user's (--servers), whose versions locktest
	// cannot know: the config names their addresses.
	Servers map[string]string `json:"servers,omitempty"`
	// Timeouts are the connection timeouts the verdict holds under: a
	// partition the kernel makes ends a lock held by a session, or not,
	// by them. None in a run checked before they were recorded.
	Timeouts []Timeout `json:"timeouts,omitempty"`
	// Fencing is what the resource node checked fencing tokens on
	// (reads-writes or writes, Config.Fencing); empty when no critical
	// section carried a token to it, where the setting changed nothing.
	Fencing string `json:"fencing,omitempty"`
	// Resources sums up the memory and connections of the coordinator and
	// the servers over the run (SamplesFile); nil for a run without
	// samples.
	Resources *Resources `json:"resources,omitempty"`
	// ClockOffsets are the clocks of the hosts of a run with --nodes, as
	// measured from the control host at its start and its end
	// (ClockOffsetsFile): the history is stamped on the control host, and
	// the servers' clocks are the hosts'.
	ClockOffsets []ClockOffset `json:"clock_offsets,omitempty"`
}

// ClockOffset is one host's clock offset to the control host's, measured
// as NTP does: its time minus the control host's, within ± the
// uncertainty (half the round trip).
type ClockOffset struct {
	Host          string `json:"host"`
	When          string `json:"when"`
	OffsetNs      int64  `json:"offset_ns"`
	UncertaintyNs int64  `json:"uncertainty_ns"`
	// AtUnixNs is when it was measured, on the control host's clock.
	AtUnixNs int64  `json:"at_unix_ns,omitempty"`
	Error    string `json:"error,omitempty"`
}

// ClockOffsetsFile holds a run's ClockOffsets, written by the run and
// read by every analysis of it.
const ClockOffsetsFile = "clock-offsets.json"

// Timeout is one connection timeout of a run: the client's per-request
// one, or a server's.
type Timeout struct {
	// Name is the setting's, as config.json names it (io_timeout,
	// server_keepalive).
	Name string `json:"name"`
	// Value is the setting's, or "server default" when the run left it
	// to each server.
	Value string `json:"value"`
	// Knobs are what each server was given for it, in its own terms
	// ("postgres tcp_user_timeout=2000").
	Knobs []string `json:"knobs,omitempty"`
}

// TimeoutsText says the run's timeouts on one line, for the summary and
// the report.
func (r Results) TimeoutsText() string {
	parts := make([]string, len(r.Timeouts))
	for i, t := range r.Timeouts {
		parts[i] = t.Name + " " + t.Value
		if len(t.Knobs) > 0 {
			parts[i] += " (" + strings.Join(t.Knobs, "; ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// Files a run directory holds.
const (
	HistoryFile  = "history.jsonl"
	ResultsFile  = "results.json"
	MutexViz     = "mutex.html"
	ResourceViz  = "resource.html"
	SummaryFile  = "summary.txt"
	ReportFile   = "report.html"
	TimelinePNG  = "timeline.png"
	TimelineSVG  = "timeline.svg"
	LatencyPNG   = "latency.png"
	RatePNG      = "rate.png"
	MemoryPNG    = "memory.png"
	ClientsPNG   = "connections.png"
	SessionsPNG  = "sessions.png"
	FiguresPNG   = "figures.png"
	NodeLogsDir  = "nodes"
	WorkerLogDir = "workers"
)

// Write writes everything people read about a run into r.Dir:
// results.json, summary.txt, porcupine's visualizations, the plots and
// report.html. recs is the history the results were checked from; the
// plots are drawn from it. Both run and analyze call it, so a re-checked
// history gets the same report as a live run. Results without Resources
// get them from the run directory's samples.
func Write(r Results, recs []history.Record) error {
	var errs []error
	samples, err := ReadSamples(r.Dir)
	errs = append(errs, err)
	if r.Resources == nil {
		r.Resources = Summarize(samples)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(r.Dir, ResultsFile), append(data, '\n'), 0o644)
	}
	errs = append(errs, err)
	errs = append(errs, writeFile(filepath.Join(r.Dir, SummaryFile), func(w io.Writer) error {
		Summary(w, r)
		return nil
	}))
	errs = append(errs,
		r.Checks.Mutex.WriteVisualization(filepath.Join(r.Dir, MutexViz), r.Checks.Faults),
		r.Checks.Resource.WriteVisualization(filepath.Join(r.Dir, ResourceViz), r.Checks.Faults))
	plots, err := writePlots(r, recs, samples)
	errs = append(errs, err)
	errs = append(errs, writeFile(filepath.Join(r.Dir, ReportFile), func(w io.Writer) error {
		return writeHTML(w, r, plots)
	}))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// SVGMaxBars is the most bars the timeline draws into its SVG; a longer
// history gets the PNG only.
const SVGMaxBars = 20000

// reportPlot is one figure of a report and how the report shows it.
type reportPlot struct {
	plotFile
	fig *figure
}

// plots are the figures of a report, drawn from its history, and its
// samples when it has some.
func plots(r Results, recs []history.Record, samples []Sample) []reportPlot {
	ops := history.Ops(recs)
	tl := newTimeline(recs, ops)
	overlapNote := "No red: no two clients ever believed they held the same lock at once."
	if n := len(tl.Episodes); n > 0 {
		overlapNote = fmt.Sprintf("Red: another client believed it held the same lock at the same time (%d episode(s)).", n)
	}
	// An SVG keeps every bar, to be zoomed into; past a few tens of
	// thousands a browser can hardly open it, and the PNG shows as much.
	svg, svgNote := TimelineSVG, ""
	if len(tl.Bars) > SVGMaxBars {
		svg = ""
		svgNote = fmt.Sprintf(" No %s: its %d bars are more than the %d a zoomable SVG keeps light.",
			TimelineSVG, len(tl.Bars), SVGMaxBars)
	}
	out := []reportPlot{
		{plotFile{ID: "timeline", Title: "Who believed they held the lock", PNG: TimelinePNG, SVG: svg,
			Caption: "One row per client; a bar from each successful acquire to the release call. " + overlapNote +
				" Shaded: faults, named at the top." + svgNote},
			tl.Plot("Who believed they held the lock — " + r.Scenario)},
		{plotFile{ID: "latency", Title: "Latency", PNG: LatencyPNG,
			Caption: "Each acquire (circle) and release (triangle) at the time it completed, with a line back to when it was called; blue ok, purple fail (definitely not done), orange info (unknown outcome)."},
			latencyPlot(ops, tl.Faults, tl.Start, tl.End)},
		{plotFile{ID: "rate", Title: "Rate", PNG: RatePNG,
			Caption: "Client operations (acquire, release, critical section) completed per second, by outcome."},
			ratePlot(ops, tl.Faults, tl.Start, tl.End)},
	}
	if len(samples) == 0 {
		return out
	}
	out = append(out,
		reportPlot{plotFile{ID: "memory", Title: "Memory", PNG: MemoryPNG,
			Caption: "Resident memory of the coordinator and of each server the run started, sampled from /proc over the whole run (before the first client and after the last one); memory that keeps growing through a long run is a leak."},
			samplePlot("Resident memory (RSS)", "MB", samples, tl.Faults, tl.Start, tl.End, func(p ProcSample) float64 { return float64(p.RSS) / (1 << 20) })},
		reportPlot{plotFile{ID: "connections", Title: "Client connections", PNG: ClientsPNG,
			Caption: "Established TCP connections on each server's own port: its clients', replicas' and sentinels', not a consensus member's to its peers. More at the end, after the clients closed, than at the start are connections held for clients that are gone."},
			samplePlot("Client connections", "connections", samples, tl.Faults, tl.Start, tl.End, func(p ProcSample) float64 { return float64(p.Clients) }, CoordinatorName)})
	if slices.ContainsFunc(samples, func(s Sample) bool { return s.Run != nil }) {
		out = append(out, reportPlot{plotFile{ID: "figures", Title: "Lost updates and strikes over time", PNG: FiguresPNG,
			Caption: "What the history said as the run went, in each sample: lost updates already certain (two acknowledged critical sections that read the same value), fault strikes begun, and those that hit (a client was granted a key another still believed it held, during the strike or a TTL after its heal) — the live estimate; the check above decides."},
			runPlot(samples, tl.Faults, tl.Start, tl.End)})
	}
	if slices.ContainsFunc(samples, func(s Sample) bool {
		return slices.ContainsFunc(s.Procs, func(p ProcSample) bool { return p.Sessions != nil })
	}) {
		out = append(out, reportPlot{plotFile{ID: "sessions", Title: "Sessions", PNG: SessionsPNG,
			Caption: "Each server's own count of its clients' sessions (Redis's connected clients, etcd's leases, ZooKeeper's sessions, PostgreSQL's client backends, MariaDB's threads), where it can say. More at the end than at the start are sessions held for clients that are gone: an etcd lease outlives its connection."},
			samplePlot("Sessions, as each server counts them", "sessions", samples, tl.Faults, tl.Start, tl.End, func(p ProcSample) float64 {
				if p.Sessions == nil {
					return math.NaN()
				}
				return float64(*p.Sessions)
			}, CoordinatorName)})
	}
	return out
}

// writePlots renders the plots and writes them beside the report.
func writePlots(r Results, recs []history.Record, samples []Sample) ([]plotFile, error) {
	var out []plotFile
	var errs []error
	// A timeline without an SVG this time must not leave an earlier one.
	if err := os.Remove(filepath.Join(r.Dir, TimelineSVG)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove the earlier %s: %w", TimelineSVG, err))
	}
	for _, s := range plots(r, recs, samples) {
		pf := s.plotFile
		pf.Width = int(s.fig.width)
		png, err := s.fig.render("png")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pf.png = png
		errs = append(errs, os.WriteFile(filepath.Join(r.Dir, pf.PNG), png, 0o644))
		if pf.SVG != "" {
			svg, err := s.fig.render("svg")
			if err == nil {
				err = os.WriteFile(filepath.Join(r.Dir, pf.SVG), svg, 0o644)
			}
			errs = append(errs, err)
		}
		out = append(out, pf)
	}
	return out, errors.Join(errs...)
}

// writeFile creates path and fills it with fill.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// ReadResults reads a run directory's results.json.
func ReadResults(dir string) (Results, error) {
	var r Results
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return r, fmt.Errorf("read results: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("read %s: %w", filepath.Join(dir, ResultsFile), err)
	}
	return r, nil
}

// DesignName is what the run's design is called wherever designs are
// shown side by side: the user's name for their program, or the impl.
func (r Results) DesignName() string {
	if r.Design != "" {
		return r.Design
	}
	return r.Impl
}
