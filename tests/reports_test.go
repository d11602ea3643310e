package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// TestReports runs three real scenarios into one store — unfenced and
// fenced Redis locks with a paused holder, and the unfenced lock without
// faults — and checks what people read about them: each run's report in a
// real browser, the holder timeline's red overlaps, analyze on a history
// cut mid-line, and the comparison of the three.
func TestReports(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	runs := map[string]reports.Results{}
	for _, sc := range []struct{ impl, fault string }{
		{"redis-single", "pause-holder"}, {"redis-single-fenced", "pause-holder"}, {"redis-single", "none"},
	} {
		r := locktestIn(t, store, "run", "--impl", sc.impl, "--workload", "counter", "--fault", sc.fault,
			"--clients", "5", "--duration", "8s", "--seed", "1", "--fault-interval", "2s")
		r.assertNothingLeft(t)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("%s/%s: exit %d", sc.impl, sc.fault, r.code)
		}
		runs[sc.impl+"/"+sc.fault] = r.results(t)
	}
	unsafe, fenced, safe := runs["redis-single/pause-holder"], runs["redis-single-fenced/pause-holder"], runs["redis-single/none"]
	if unsafe.Verdict != checker.Invalid || fenced.Verdict != checker.Valid || safe.Verdict != checker.Valid {
		t.Fatalf("verdicts %s %s %s, want invalid valid valid: the scenarios below would prove nothing",
			unsafe.Verdict, fenced.Verdict, safe.Verdict)
	}

	t.Run("report opens in chromium with its plots", func(t *testing.T) {
		page := filepath.Join(unsafe.Dir, reports.ReportFile)
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{reports.TimelinePNG, reports.TimelineSVG, reports.LatencyPNG, reports.RatePNG, reports.MemoryPNG, reports.ClientsPNG, reports.FiguresPNG, reports.SessionsPNG} {
			if info, err := os.Stat(filepath.Join(unsafe.Dir, f)); err != nil || info.Size() == 0 {
				t.Errorf("plot %s missing or empty: %v", f, err)
			}
		}
		for _, want := range []string{unsafe.Scenario, "seed <b>1</b>", "UNSAFE", "lost updates", "stale writes rejected",
			"fault active: pause-holder on c", `href="mutex.html"`, `href="resource.html"`, `href="history.jsonl"`} {
			if !bytes.Contains(doc, []byte(want)) {
				t.Errorf("report lacks %q", want)
			}
		}
		// Self-contained: every image is embedded and decodes.
		srcs := regexp.MustCompile(`src="([^"]*)"`).FindAllSubmatch(doc, -1)
		if len(srcs) != 7 {
			t.Fatalf("%d images in the report, want 7 plots (timeline, latency, rate, memory, connections, figures, sessions)", len(srcs))
		}
		for _, m := range srcs {
			data, ok := bytes.CutPrefix(m[1], []byte("data:image/png;base64,"))
			if !ok {
				t.Fatalf("image not embedded: %.60s", m[1])
			}
			raw, err := base64.StdEncoding.DecodeString(html.UnescapeString(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
				t.Fatalf("embedded plot is not a PNG: %v", err)
			}
		}
		// What the browser shows holds no format-verb garbage (%!f(…)),
		// and every fault row says when the lock was next acquired.
		dom := dumpDOM(t, page)
		if i := strings.Index(dom, "%!"); i >= 0 {
			t.Errorf("report.html as rendered holds format-verb garbage: %q", dom[i:min(len(dom), i+60)])
		}
		if rows, said := len(unsafe.Checks.Faults), regexp.MustCompile(`\d+ ms later|never in the|never: the run ended`).FindAllString(dom, -1); rows == 0 || len(said) != rows {
			t.Errorf("%d fault rows, %d say when the lock was next acquired", rows, len(said))
		}
		shot := screenshot(t, page, 1280, 2400)
		st := pixelStats(shot)
		t.Logf("screenshot: %d colors, %.1f%% not white, %d overlap-red pixels, %d fault-shade pixels",
			st.colors, 100*st.inked, st.red, st.faultShade)
		if st.colors < 50 || st.inked < 0.05 {
			t.Fatalf("screenshot looks blank: %d colors, %.1f%% inked", st.colors, 100*st.inked)
		}
		// The legend swatch alone is 240 red pixels; the overlaps are more.
		if st.red < 1000 || st.faultShade < 5000 {
			t.Fatalf("the timeline's red overlaps (%d px) or the fault shading (%d px) do not show", st.red, st.faultShade)
		}
	})

	t.Run("timeline red exactly when holders overlap", func(t *testing.T) {
		cases := []struct {
			name     string
			res      reports.Results
			red      bool
			rejected bool
		}{
			{"unfenced, paused holder", unsafe, true, false},
			{"fenced, paused holder", fenced, true, true},
			{"no fault", safe, false, false},
		}
		for _, tc := range cases {
			recs, err := history.ReadFile(filepath.Join(tc.res.Dir, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			tl := reports.NewTimeline(recs)
			var rejected, lost int
			for _, m := range tl.Marks {
				switch m.Kind {
				case reports.MarkRejected:
					rejected++
				case reports.MarkLost:
					lost++
				}
			}
			if lost != tc.res.Checks.Stats.Lost {
				t.Errorf("%s: %d lost-update marks, the summary counts %d lost", tc.name, lost, tc.res.Checks.Stats.Lost)
			}
			t.Logf("%s: %d bars, %d red, %d episodes, %d rejected-write marks", tc.name, len(tl.Bars), len(tl.Overlaps()), len(tl.Episodes), rejected)
			if len(tl.Bars) < 20 {
				t.Errorf("%s: only %d bars", tc.name, len(tl.Bars))
			}
			if got := len(tl.Overlaps()) > 0; got != tc.red {
				t.Errorf("%s: red overlap %v, want %v", tc.name, got, tc.red)
			}
			if got := len(tl.Overlaps()) > 0; got != (tc.res.Checks.Mutex.Verdict == checker.Invalid) {
				t.Errorf("%s: red overlap %v but mutex check %s", tc.name, got, tc.res.Checks.Mutex.Verdict)
			}
			if (rejected > 0) != tc.rejected || rejected != tc.res.Checks.Stats.Rejected {
				t.Errorf("%s: %d rejected marks, resource rejected %d", tc.name, rejected, tc.res.Checks.Stats.Rejected)
			}
		}
	})

	t.Run("analyze a history cut mid-line", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(unsafe.Dir, reports.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		recs, err := history.Read(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		firstFault, afterLoss := -1, -1
		for i, r := range recs {
			if r.Type == history.FaultStart && firstFault < 0 {
				firstFault = i
			}
		}
		lost := unsafe.Checks.Resource.Violations[0].Ops
		for _, op := range history.Ops(recs) {
			for _, l := range lost {
				if op.InvokeIndex == l.Index {
					afterLoss = max(afterLoss, op.CompleteIndex+5)
				}
			}
		}
		if firstFault < 1 || afterLoss < 0 || afterLoss >= len(recs) {
			t.Fatalf("cannot place the cuts: first fault at record %d, lost update complete by %d of %d", firstFault, afterLoss, len(recs))
		}
		cases := []struct {
			name string
			line int // the line cut in half
			want checker.Verdict
		}{
			// A prefix without the run's end proves nothing safe: unknown.
			{"before the first fault", firstFault, checker.Unknown},
			{"after the first lost update", afterLoss, checker.Invalid},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				prefix := bytes.Join(lines[:tc.line], nil)
				cut := append(append([]byte{}, prefix...), lines[tc.line][:len(lines[tc.line])/2]...)
				whole := analyzeHistory(t, store, prefix)
				truncated := analyzeHistory(t, store, cut)
				if !truncated.res.Truncated || whole.res.Truncated {
					t.Fatalf("truncated flag: cut %v, whole prefix %v", truncated.res.Truncated, whole.res.Truncated)
				}
				if !strings.Contains(truncated.stdout, "cut off") || !strings.Contains(truncated.html, "cut off") {
					t.Fatalf("analyze does not say the history was truncated:\n%s", truncated.stdout)
				}
				if strings.Contains(whole.stdout, "cut off") {
					t.Fatal("a complete history is reported as truncated")
				}
				a, b := truncated.res, whole.res
				if a.Verdict != tc.want || b.Verdict != tc.want || truncated.code != whole.code {
					t.Fatalf("verdicts cut %s (exit %d), whole prefix %s (exit %d), want %s",
						a.Verdict, truncated.code, b.Verdict, whole.code, tc.want)
				}
				if a.Records != tc.line || b.Records != tc.line || a.Checks.Mutex.Verdict != b.Checks.Mutex.Verdict ||
					a.Checks.Stats != b.Checks.Stats || a.Checks.Resource.Ops != b.Checks.Resource.Ops {
					t.Fatalf("cut and whole prefix differ: %d/%d records, mutex %s/%s, stats %+v / %+v",
						a.Records, b.Records, a.Checks.Mutex.Verdict, b.Checks.Mutex.Verdict, a.Checks.Stats, b.Checks.Stats)
				}
			})
		}
	})

	t.Run("compare", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "cmp")
		r := locktestIn(t, store, "compare", store, "--out", out)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "| design \\ fault | none | pause-holder |") || !strings.Contains(r.stdout, "❌ **unsafe**") {
			t.Fatalf("markdown matrix missing:\n%s", r.stdout)
		}
		var m reports.Matrix
		data, err := os.ReadFile(filepath.Join(out, reports.CompareJSON))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		cells := []struct {
			design, fault string
			want          reports.Outcome
			lost, mutex   bool
		}{
			{"redis-single", "pause-holder", reports.Unsafe, true, true},
			{"redis-single-fenced", "pause-holder", reports.Safe, false, true},
			{"redis-single", "none", reports.Safe, false, false},
		}
		for _, tc := range cells {
			c, ok := m.Cell(tc.design, reports.Column{Fault: tc.fault})
			if !ok {
				t.Fatalf("no cell %s × %s in %s", tc.design, tc.fault, data)
			}
			if c.Outcome != tc.want || (c.LostUpdates > 0) != tc.lost || (c.MutexUnsafe > 0) != tc.mutex ||
				(c.FirstViolationS != nil) != tc.lost || c.Throughput <= 0 || c.CommandsPerAcquisition <= 0 || c.AcquireP99Ms <= 0 {
				t.Errorf("%s × %s: %+v", tc.design, tc.fault, c)
			}
			if tc.fault == "pause-holder" && c.Recoveries == 0 {
				t.Errorf("%s × %s: no recovery time measured", tc.design, tc.fault)
			}
		}
		if _, ok := m.Cell("redis-single-fenced", reports.Column{Fault: "none"}); ok {
			t.Error("a cell for a scenario never run")
		}
		f, err := os.Open(filepath.Join(out, reports.ComparePNG))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := png.Decode(f); err != nil {
			t.Fatal(err)
		}
		st := pixelStats(screenshot(t, filepath.Join(out, reports.CompareHTML), 1280, 1200))
		if st.colors < 20 || st.inked < 0.05 {
			t.Fatalf("compare.html screenshot looks blank: %+v", st)
		}
	})

	t.Run("compare bad input", func(t *testing.T) {
		for _, dir := range []string{filepath.Join(t.TempDir(), "missing"), t.TempDir()} {
			r := locktestIn(t, store, "compare", dir, "--out", filepath.Join(t.TempDir(), "cmp"))
			if r.code != 254 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("compare %s: exit %d, stderr %q; want 254 and one line", dir, r.code, r.stderr)
			}
		}
	})
}

type analyzed struct {
	res          reports.Results
	code         int
	stdout, html string
}

// analyzeHistory stores history in a fresh run directory (beside the
// store's runs, with the unfenced run's config) and runs locktest analyze.
func analyzeHistory(t *testing.T, store string, hist []byte) analyzed {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(store, "redis-single_counter_pause-holder", "latest", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), hist, 0o644); err != nil {
		t.Fatal(err)
	}
	r := locktestIn(t, store, "analyze", dir)
	res, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatalf("analyze wrote no results (exit %d): %v", r.code, err)
	}
	html, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatalf("analyze wrote no report: %v", err)
	}
	return analyzed{res: res, code: r.code, stdout: r.stdout, html: string(html)}
}

// dumpDOM opens page in headless Chromium and returns the document as
// the browser built it.
func dumpDOM(t *testing.T, page string) string {
	t.Helper()
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+profile, "--dump-dom", "file://"+page)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	assertNothingLeft(t, profile)
	return string(out)
}

// screenshot opens page in headless Chromium (Debian's chromium; a missing
// browser fails the test) and returns what it showed. Console messages or
// failed loads fail the test: the report has no script and loads nothing.
func screenshot(t *testing.T, page string, width, height int) image.Image {
	t.Helper()
	profile := t.TempDir()
	shot := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+profile, "--enable-logging=stderr", "--v=0",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+shot, "file://"+page)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "net::ERR") || strings.Contains(line, "Failed to load") {
			t.Errorf("chromium reported: %s", line)
		}
	}
	assertNothingLeft(t, profile)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("LOCKTEST_KEEP_SCREENSHOTS"); keep != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(filepath.Join(keep, filepath.Base(filepath.Dir(page))+"-"+filepath.Base(page)+".png"), data, 0o644)
	}
	return img
}

type pixels struct {
	colors          int
	inked           float64 // share of pixels that are not near-white
	red, faultShade int     // pixels of the overlap red and of fault shading on white
}

func pixelStats(img image.Image) pixels {
	var p pixels
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	var inked int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			seen[[3]uint32{r, g, bl}] = true
			if r < 240 || g < 240 || bl < 240 {
				inked++
			}
			if r > 200 && g < 50 && bl < 60 {
				p.red++
			}
			if r > 250 && g > 230 && g < 245 && bl > 185 && bl < 205 {
				p.faultShade++
			}
		}
	}
	p.colors = len(seen)
	p.inked = float64(inked) / float64(b.Dx()*b.Dy())
	return p
}
