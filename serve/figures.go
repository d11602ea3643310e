package serve

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locktest/locktest/reports"
)

// Figures are a run's figures over time, read from its samples file: the
// lost updates and the strikes that hit so far (reports.RunFigures), and
// the memory and sessions of the coordinator and each server. They come
// from one file of at most a few thousand lines however long the run
// (the sampler thins it), so a page that reloads every 2 s during an
// 8-hour soak reads the same little as during a minute's run, and a
// finished run's page shows the same figures as it did while it ran.
type Figures struct {
	// Rows are a dozen samples spread over the run, first and last
	// among them: a table that reads without a plot.
	Rows []FigureRow
	// Servers name the memory columns of Rows; Counted the servers
	// whose sessions are counted, and the sessions columns.
	Servers []string
	Counted []string
	Charts  []Chart
	// Run: the samples hold the run's figures (samples taken before they
	// were recorded hold only the processes').
	Run bool
}

// FigureRow is one sample: its time since the first (taken before the
// clients start), the run's figures then, and each process's memory
// (MB) and sessions, "" where it could not be read.
type FigureRow struct {
	At                            string
	Ops, Lost, Strikes, Effective int
	Coordinator                   string
	Memory, Sessions              []string
}

// Chart is a small line plot, drawn as inline SVG on the page (its CSP
// allows no script, and a chart needs none): one or more lines over the
// same time axis, scaled to the largest value.
type Chart struct {
	Title string
	Max   string // the top of the scale, as the title's unit says
	Lines []ChartLine
}

// ChartLine is one series: its points in the chart's 0..chartW × 0..chartH
// box, its colour and name, and its newest value.
type ChartLine struct {
	Name, Color, Points, Last string
}

// The charts' box, and the most points a line gets: more than a plot this
// wide can show would only grow the page.
const (
	chartW, chartH = 300, 60
	chartPoints    = 300
	tableRows      = 12
)

// chartColors are the lines' colours, in order (the reports' palette).
var chartColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// series is one named line's values by sample; ok false where the sample
// has no value for it.
type series struct {
	name string
	val  []float64
	ok   []bool
}

// figures makes the figures of samples; nil without any.
func figures(samples []reports.Sample) *Figures {
	if len(samples) == 0 {
		return nil
	}
	f := &Figures{}
	t0 := samples[0].Time
	// The processes in the order first seen, and which count sessions.
	var names []string
	counts := map[string]string{}
	for _, s := range samples {
		f.Run = f.Run || s.Run != nil
		for _, p := range s.Procs {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
			if p.Sessions != nil && counts[p.Name] == "" {
				counts[p.Name] = p.SessionsWhat
			}
		}
	}
	for _, n := range names {
		if n != reports.CoordinatorName {
			f.Servers = append(f.Servers, n)
		}
		if counts[n] != "" {
			f.Counted = append(f.Counted, n)
		}
	}
	mem := func(name string) series {
		sr := series{name: name}
		for _, s := range samples {
			i := slices.IndexFunc(s.Procs, func(p reports.ProcSample) bool { return p.Name == name && p.Error == "" })
			if i < 0 {
				sr.val, sr.ok = append(sr.val, 0), append(sr.ok, false)
				continue
			}
			sr.val, sr.ok = append(sr.val, float64(s.Procs[i].RSS)/(1<<20)), append(sr.ok, true)
		}
		return sr
	}
	sess := func(name string) series {
		sr := series{name: name + " (" + counts[name] + ")"}
		for _, s := range samples {
			i := slices.IndexFunc(s.Procs, func(p reports.ProcSample) bool { return p.Name == name && p.Sessions != nil })
			if i < 0 {
				sr.val, sr.ok = append(sr.val, 0), append(sr.ok, false)
				continue
			}
			sr.val, sr.ok = append(sr.val, float64(*s.Procs[i].Sessions)), append(sr.ok, true)
		}
		return sr
	}
	run := func(name string, v func(reports.RunFigures) int) series {
		sr := series{name: name}
		for _, s := range samples {
			if s.Run == nil {
				sr.val, sr.ok = append(sr.val, 0), append(sr.ok, false)
				continue
			}
			sr.val, sr.ok = append(sr.val, float64(v(*s.Run))), append(sr.ok, true)
		}
		return sr
	}

	if f.Run {
		f.Charts = append(f.Charts,
			chart(samples, "lost updates so far", run("lost", func(r reports.RunFigures) int { return r.Lost })),
			chart(samples, "fault strikes", run("begun", func(r reports.RunFigures) int { return r.Strikes }),
				run("hit", func(r reports.RunFigures) int { return r.Effective })))
	}
	var memLines []series
	for _, n := range names {
		memLines = append(memLines, mem(n))
	}
	f.Charts = append(f.Charts, chart(samples, "memory (RSS), MB", memLines...))
	if len(f.Counted) > 0 {
		var sl []series
		for _, n := range f.Counted {
			sl = append(sl, sess(n))
		}
		f.Charts = append(f.Charts, chart(samples, "sessions, as each server counts them", sl...))
	}

	for _, i := range spread(len(samples), tableRows) {
		s := samples[i]
		row := FigureRow{At: fmt.Sprintf("%.1f s", float64(s.Time-t0)/1e9)}
		if s.Run != nil {
			row.Ops, row.Lost, row.Strikes, row.Effective = s.Run.Ops, s.Run.Lost, s.Run.Strikes, s.Run.Effective
		}
		for _, n := range names {
			i := slices.IndexFunc(s.Procs, func(p reports.ProcSample) bool { return p.Name == n })
			cell, sessions := "", ""
			if i >= 0 && s.Procs[i].Error == "" {
				cell = megabytes(s.Procs[i].RSS)
				if c := s.Procs[i].Sessions; c != nil {
					sessions = strconv.Itoa(*c)
				}
			}
			if n == reports.CoordinatorName {
				row.Coordinator = cell
				continue
			}
			row.Memory = append(row.Memory, cell)
			if counts[n] != "" {
				row.Sessions = append(row.Sessions, sessions)
			}
		}
		f.Rows = append(f.Rows, row)
	}
	return f
}

// spread picks at most k indices of n spread evenly, the first and last
// among them.
func spread(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, k)
	for i := range out {
		out[i] = i * (n - 1) / (k - 1)
	}
	return out
}

// chart draws lines over the samples' time, each scaled to the largest
// value of them all; a line breaks where its value is missing.
func chart(samples []reports.Sample, title string, lines ...series) Chart {
	c := Chart{Title: title}
	t0, t1 := samples[0].Time, samples[len(samples)-1].Time
	top := 0.0
	for _, l := range lines {
		for i, v := range l.val {
			if l.ok[i] {
				top = max(top, v)
			}
		}
	}
	c.Max = strconv.FormatFloat(top, 'f', -1, 64)
	if top >= 10 || top != float64(int64(top)) {
		c.Max = fmt.Sprintf("%.0f", top)
	}
	scale := max(top, 1)
	idx := spread(len(samples), chartPoints)
	for k, l := range lines {
		var pts []string
		last := ""
		for _, i := range idx {
			if !l.ok[i] {
				continue
			}
			x := 0.0
			if t1 > t0 {
				x = float64(samples[i].Time-t0) / float64(t1-t0) * chartW
			}
			y := chartH - l.val[i]/scale*chartH
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			last = strconv.FormatFloat(l.val[i], 'f', -1, 64)
			if l.val[i] != float64(int64(l.val[i])) {
				last = fmt.Sprintf("%.1f", l.val[i])
			}
		}
		c.Lines = append(c.Lines, ChartLine{Name: l.name, Color: chartColors[k%len(chartColors)], Points: strings.Join(pts, " "), Last: last})
	}
	return c
}

// megabytes says n bytes in MB: 3.1, 41.
func megabytes(n int64) string {
	mb := float64(n) / (1 << 20)
	if mb >= 10 {
		return fmt.Sprintf("%.0f", mb)
	}
	return fmt.Sprintf("%.1f", mb)
}
