package reports_test

import (
	"bytes"
	"encoding/base64"
	"flag"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// analyzeStored re-checks a copy of the stored 60 s run, as analyze does.
func analyzeStored(t *testing.T) reports.Results {
	t.Helper()
	cfg, err := scenario.LoadConfig(stored)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := runner.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Analyze(runDir(t), resolved)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestStoredRunReport re-checks the stored 60 s run (12 faults, 12 lost
// updates) and reads its report.html as a user would: no format-verb
// garbage, a recovery time in words for every fault, as many lost-update
// marks on the timeline as the summary counts lost updates, and plots
// shown at the size they were laid out at.
func TestStoredRunReport(t *testing.T) {
	res := analyzeStored(t)
	if res.Checks.Stats.Lost == 0 || len(res.Checks.Faults) == 0 {
		t.Fatalf("%d lost, %d faults: not the stored run", res.Checks.Stats.Lost, len(res.Checks.Faults))
	}
	page, err := os.ReadFile(filepath.Join(res.Dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	// A run from before timeouts were settings ran under the servers'
	// defaults, and says so.
	said := regexp.MustCompile(`<p>Timeouts the verdict holds under: io_timeout [0-9.]+m?s, server_keepalive server default, server_idle_timeout server default</p>`)
	if !said.Match(page) {
		t.Errorf("report.html does not say the run's timeouts")
	}
	if i := bytes.Index(page, []byte("%!")); i >= 0 {
		t.Errorf("report.html holds format-verb garbage: %q", page[i:min(len(page), i+60)])
	}
	recovery := regexp.MustCompile(`<td class="num">(\d+ ms later|never in the [0-9.]+ s the run went on|never: the run ended as the fault began)</td><td>`)
	if n := len(recovery.FindAll(page, -1)); n != len(res.Checks.Faults) {
		t.Errorf("%d fault rows say when the lock was next acquired, want %d", n, len(res.Checks.Faults))
	}

	recs, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var marked int
	for _, m := range reports.NewTimeline(recs).Marks {
		if m.Kind == reports.MarkLost {
			marked++
		}
	}
	if marked != res.Checks.Stats.Lost {
		t.Errorf("the timeline marks %d lost updates, the summary counts %d", marked, res.Checks.Stats.Lost)
	}

	imgs := regexp.MustCompile(`<img src="data:image/png;base64,([^"]+)" alt="[^"]*" width="(\d+)">`).FindAllSubmatch(page, -1)
	if len(imgs) != 3 {
		t.Fatalf("%d plots in report.html, want 3", len(imgs))
	}
	for _, m := range imgs {
		raw, err := base64.StdEncoding.DecodeString(html.UnescapeString(string(m[1])))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.DecodeConfig(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		shown, _ := strconv.Atoi(string(m[2]))
		if img.Width != 2*shown {
			t.Errorf("a %d px wide plot shown %d px wide: want it drawn at twice its size", img.Width, shown)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files of the stored run")

// TestStoredRunSummaryGolden re-checks the stored 60 s run and compares its
// summary, byte for byte, with the one kept beside it: a faster check must
// not change what a user reads. The run directory's path, which a test's
// temporary directory changes, reads as <run dir>. After a deliberate
// change of the summary: go test -run SummaryGolden -update ./reports.
func TestStoredRunSummaryGolden(t *testing.T) {
	res := analyzeStored(t)
	got, err := os.ReadFile(filepath.Join(res.Dir, reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	got = bytes.ReplaceAll(got, []byte(res.Dir), []byte("<run dir>"))
	golden := filepath.Join(stored, "summary.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the stored run's summary differs from %s:\n--- got\n%s\n--- want\n%s", golden, got, want)
	}
}
