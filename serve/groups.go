package serve

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/locktest/locktest/envelope"
	"github.com/locktest/locktest/explore"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/suite"
)

// Group is what the index folds runs under: an exploration, a sweep or a
// suite's output, whose own page says what its runs add up to; or, for
// runs of their own, a scenario.
type Group struct {
	Kind  string // "exploration", "sweep", "suite", or "scenario"
	Path  string // the store path of its directory ("" for a scenario)
	Title string
	// Page is the group's own page or picture, a store path; Summary says
	// in a line what it found.
	Page    string
	Summary string
	Class   string // safe, unsafe, unknown, or "" when it does not say
	Runs    []Run
}

// containers are the kinds of directory whose runs fold under them, by
// the file that marks one, with the page to link.
var containers = []struct{ kind, marker, page string }{
	{"exploration", explore.ReportJSON, explore.ReportHTML},
	{"sweep", reports.EnvelopeFile, envelope.PNGFile},
	{"suite", suite.ReportFile, suite.SummaryFile},
}

// container reports whether the directory p marks a group, and makes it.
func (s *Server) container(p string) (*Group, bool) {
	for _, c := range containers {
		data, err := fs.ReadFile(s.root.FS(), path.Join(p, c.marker))
		if err != nil {
			continue
		}
		g := &Group{Kind: c.kind, Path: p, Title: p, Page: path.Join(p, c.page)}
		g.Summary, g.Class = summarize(c.kind, data)
		return g, true
	}
	return nil, false
}

// summarize reads what a group's own file says it found, in one line.
func summarize(kind string, data []byte) (string, string) {
	switch kind {
	case "exploration":
		var r struct {
			Impl   string `json:"impl"`
			Trials []any  `json:"trials"`
			Found  *struct {
				Class string `json:"class"`
			} `json:"found"`
		}
		if json.Unmarshal(data, &r) != nil {
			return "explore.json cannot be read", "unknown"
		}
		if r.Found == nil {
			return fmt.Sprintf("%s: no violation in %d trials", r.Impl, len(r.Trials)), "safe"
		}
		return fmt.Sprintf("%s: lost updates, %s, in %d trials", r.Impl, strings.ReplaceAll(r.Found.Class, "-", " "), len(r.Trials)), "unsafe"
	case "sweep":
		var r struct {
			Impl    string `json:"impl"`
			Plan    struct{ Fault string }
			Outcome struct{ Finding string }
		}
		if json.Unmarshal(data, &r) != nil {
			return "envelope.json cannot be read", "unknown"
		}
		return fmt.Sprintf("%s under %s: %s", r.Impl, r.Plan.Fault, r.Outcome.Finding), ""
	case "suite":
		var r suite.Report
		if json.Unmarshal(data, &r) != nil {
			return "suite.json cannot be read", "unknown"
		}
		pass := 0
		for _, o := range r.Outcomes {
			if o.Status == suite.Pass {
				pass++
			}
		}
		class := "safe"
		if !r.Passed() {
			class = "unsafe"
		}
		return fmt.Sprintf("suite %s: %d of %d runs as expected", r.Suite, pass, len(r.Outcomes)), class
	}
	return "", ""
}

// group folds runs under the containers they lie in, and the rest by
// scenario; groups keep the order of their newest run.
func group(runs []Run, found []*Group) []*Group {
	var out []*Group
	byScenario := map[string]*Group{}
	placed := map[*Group]bool{}
	for _, r := range runs {
		var g *Group
		for _, c := range found {
			if strings.HasPrefix(r.Path, c.Path+"/") && (g == nil || len(c.Path) > len(g.Path)) {
				g = c
			}
		}
		if g == nil {
			name := r.Config.Scenario
			if g = byScenario[name]; g == nil {
				g = &Group{Kind: "scenario", Title: name}
				byScenario[name] = g
			}
		}
		if !placed[g] {
			placed[g] = true
			out = append(out, g)
		}
		g.Runs = append(g.Runs, r)
	}
	for _, c := range found { // an exploration or sweep whose runs are gone
		if !placed[c] {
			out = append(out, c)
		}
	}
	return out
}
