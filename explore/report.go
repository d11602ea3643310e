package explore

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// Files an exploration writes into its directory.
const (
	ReportJSON  = "explore.json"
	ReportHTML  = "explore.html"
	CapsuleFile = "capsule.yaml"
)

//go:embed explore.html.tmpl
var pageTmpl string

var page = template.Must(template.New("explore").Funcs(template.FuncMap{
	"pct": func(a, b int) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%d%%", 100*a/b)
	},
	"rel":       func(path string) string { return path }, // replaced per exploration in write
	"classText": reports.LeaseClassText,
	"pctf":      func(x float64) float64 { return 100 * x },
	"timeline":  timeline,
}).Parse(pageTmpl))

// write writes the capsule (if something was found), explore.json and
// explore.html.
func write(rep *Report, o Options) error {
	if rep.Found != nil {
		rep.Found.Capsule = filepath.Join(o.Out, CapsuleFile)
		data, err := Capsule(rep)
		if err != nil {
			return err
		}
		if err := os.WriteFile(rep.Found.Capsule, data, 0o644); err != nil {
			return fmt.Errorf("write capsule: %w", err)
		}
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", ReportJSON, err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, ReportJSON), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", ReportJSON, err)
	}
	var buf bytes.Buffer
	// Links are relative, so the directory can be moved or served.
	rel := func(path string) string {
		if r, err := filepath.Rel(o.Out, path); err == nil {
			return r
		}
		return path
	}
	if err := template.Must(page.Clone()).Funcs(template.FuncMap{"rel": rel}).Execute(&buf, rep); err != nil {
		return fmt.Errorf("render %s: %w", ReportHTML, err)
	}
	return os.WriteFile(filepath.Join(o.Out, ReportHTML), buf.Bytes(), 0o644)
}

// missChance bounds how often a capsule's replay may miss its anomaly by
// chance: a CI check that fails now and then is one nobody trusts.
const missChance = 0.01

// maxReplaySeeds bounds a capsule's seeds: a rarer finding replays on
// this many and says how likely they all miss.
const maxReplaySeeds = 30

// replay says how a capsule replays its finding: the rate it measured (the
// failing share of the judging seeds, shrunk toward a miss by counting one
// seed more, since a handful of seeds overstates it), and enough seeds that
// at that rate all of them miss together with under missChance. The seeds
// that failed come first.
func (f *Finding) replay() (rate, miss float64, seeds []int64) {
	rate = float64(len(f.Failed)) / float64(len(f.Seeds)+1)
	n := maxReplaySeeds
	if rate > 0 {
		n = min(maxReplaySeeds, max(1, int(math.Ceil(math.Log(missChance)/math.Log(1-rate)))))
	}
	seeds = append(seeds, f.Failed...)
	for _, s := range f.Seeds {
		if !slices.Contains(seeds, s) {
			seeds = append(seeds, s)
		}
	}
	next := slices.Max(append([]int64{0}, seeds...)) + 1
	for ; len(seeds) < n; next++ {
		seeds = append(seeds, next)
	}
	return rate, math.Pow(1-rate, float64(len(seeds))), seeds
}

// Capsule is the finding as a suite file that `locktest suite run`
// accepts as it is: one scenario with every setting that differs from the
// defaults, on enough seeds that it shows its anomaly in at least one of
// them but by a chance under missChance (replay).
func Capsule(rep *Report) ([]byte, error) {
	f := rep.Found
	settings, err := nonDefault(f.Config)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Found by %s explore --impl %s --seed %d (trial t%03d), shrunk in %d step(s):\n",
		scenario.Program(), rep.Impl, rep.Seed, f.Trial, max(0, len(f.Steps)-1))
	rate, miss, replaySeeds := f.replay()
	fmt.Fprintf(&b, "# lost updates in %d of %d judging seeds: a rate taken as %.2f, at which all %d seeds here miss together\n",
		len(f.Failed), len(f.Seeds), rate, len(replaySeeds))
	fmt.Fprintf(&b, "# with chance %.4f; it expects the loss in any one of them. Replay: %s suite run %s\n", miss, scenario.Program(), CapsuleFile)
	fmt.Fprintf(&b, "name: explore-%s\nscenarios:\n", rep.Impl)
	fmt.Fprintf(&b, "  - name: %s-%s-explored\n", rep.Impl, strings.Join(faults.MemberNames(f.Config.Faults), "-"))
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		// JSON is YAML's flow style: lists stay on the key's line.
		v, err := json.Marshal(settings[k])
		if err != nil {
			return nil, fmt.Errorf("capsule: %s: %w", k, err)
		}
		fmt.Fprintf(&b, "    %s: %s\n", k, v)
	}
	seeds := make([]string, len(replaySeeds))
	for i, s := range replaySeeds {
		seeds[i] = fmt.Sprint(s)
	}
	fmt.Fprintf(&b, "    seeds: [%s]\n    expect: {verdict: unsafe, any_seed: true}\n", strings.Join(seeds, ", "))
	return []byte(b.String()), nil
}

// nonDefault returns the suite fields (scenario.Config's JSON names) whose
// values differ from the defaults, plus the design, workload and faults.
func nonDefault(c scenario.Config) (map[string]any, error) {
	asMap := func(c scenario.Config) (map[string]any, error) {
		data, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		return m, json.Unmarshal(data, &m)
	}
	have, err := asMap(c)
	if err != nil {
		return nil, fmt.Errorf("capsule: %w", err)
	}
	def, err := asMap(scenario.Defaults())
	if err != nil {
		return nil, fmt.Errorf("capsule: %w", err)
	}
	out := map[string]any{}
	for k, v := range have {
		switch k {
		case "seed", "scenario":
			continue
		case "impl", "workload", "faults":
			out[k] = v
			continue
		}
		if fmt.Sprint(v) != fmt.Sprint(def[k]) {
			out[k] = v
		}
	}
	return out, nil
}

// Print writes the outcome for a terminal: the finding and its capsule, or
// the coverage that backs "no violation found".
func Print(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "explored %s × %s: %d trials in %.0fs (budget %.0fs), explore seed %d\n",
		rep.Impl, strings.Join(rep.Faults, ","), len(rep.Trials), rep.Elapsed, rep.Budget, rep.Seed)
	if f := rep.Found; f != nil {
		fmt.Fprintf(w, "FOUND     lost updates in trial t%03d after %.0fs: %s\n", f.Trial, rep.FoundAfter, f.Knobs)
		fmt.Fprintf(w, "class     %s\n", reports.LeaseClassText(f.Class))
		if n := reports.FencingNote(f.Class, f.Config.Fencing); n != "" {
			fmt.Fprintf(w, "          %s\n", n)
		}
		for _, a := range rep.Also {
			fmt.Fprintf(w, "also      %s, in trial t%03d: %s\n", reports.LeaseClassText(a.Class), a.N, a.Knobs)
		}
		for _, s := range f.Steps {
			mark := "dropped"
			if s.Kept {
				mark = "kept"
			}
			fmt.Fprintf(w, "shrink    %-45s %d/%d seeds failed, %s\n", s.What, s.Failed, s.Tried, mark)
		}
		if f.Incomplete {
			fmt.Fprintf(w, "shrink    stopped early: %s\n", f.Stopped)
		}
		fmt.Fprintf(w, "replay    %s\n", f.Command)
		fmt.Fprintf(w, "capsule   %s (%s suite run %s)\n", f.Capsule, scenario.Program(), f.Capsule)
		fmt.Fprintf(w, "report    %s\n", f.Report)
	} else if rep.Unknown() {
		fmt.Fprintf(w, "UNKNOWN   not one of %d trials could be judged (their runs say why): nothing was covered\n", len(rep.Trials))
	} else {
		fmt.Fprintln(w, "no violation found under this coverage (not a proof of safety):")
		for _, c := range rep.Coverage {
			var ms []string
			for _, m := range sortedMoments(c.Moments) {
				mc := c.Moments[m]
				ms = append(ms, fmt.Sprintf("%s %d (%d effective)", m, mc.Strikes, mc.Effective))
			}
			fmt.Fprintf(w, "  %-20s %2d trials, %3d strikes: %s\n", c.Fault, c.Trials, c.Strikes, strings.Join(ms, ", "))
			length := fmt.Sprintf("%.2f–%.2f", c.FaultLen[0], c.FaultLen[1])
			if c.FaultLen2 != nil {
				length += fmt.Sprintf(" and %.2f–%.2f", c.FaultLen2[0], c.FaultLen2[1])
			}
			fmt.Fprintf(w, "  %-20s length %s×TTL, hold %.2f–%.2f×TTL, clients %d–%d, keys %d–%d, targets %s%s\n",
				"", length, c.Hold[0], c.Hold[1], c.Clients[0], c.Clients[1], c.Keys[0], c.Keys[1],
				strings.Join(c.Targets, ","), fencingTrials(c.Fencing))
		}
		fmt.Fprintf(w, "  pairs (a+b strike together) were %.0f%% of the fresh draws of a fault that has a partner\n", 100*rep.PairShare)
	}
	if n := rep.Unjudged(); n > 0 && !rep.Unknown() {
		fmt.Fprintf(w, "unknown   %d of %d trials could not be judged (their runs say why)\n", n, len(rep.Trials))
	}
	if rep.HoldCap > 0 {
		fmt.Fprintf(w, "fault-free lost updates with longer critical sections: the workload alone outlived the lease; holds capped at %.2f×TTL\n", rep.HoldCap)
	}
	for f, why := range rep.Skipped {
		fmt.Fprintf(w, "skipped   %s: %s\n", f, why)
	}
	for why, n := range rep.Rejected {
		fmt.Fprintf(w, "rejected  %d draw(s): %s\n", n, why)
	}
	fmt.Fprintf(w, "report    %s\n", filepath.Join(rep.Dir, ReportHTML))
}

// fencingTrials says how many trials ran with each resource fencing, in
// FencingModes order; "" when the search drew none.
func fencingTrials(n map[string]int) string {
	var out []string
	for _, f := range workloads.FencingModes {
		if n[f] > 0 {
			out = append(out, fmt.Sprintf("%s %d", f, n[f]))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ", fencing " + strings.Join(out, " / ")
}

func sortedMoments(m map[string]*MomentCount) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
