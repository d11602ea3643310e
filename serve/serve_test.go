package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/explore"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// writeRun makes a run directory as the coordinator does: config.json,
// then the history; it returns the directory's path in the store.
func writeRun(t *testing.T, store, stamp string, recs []history.Record) (string, runner.Resolved) {
	t.Helper()
	cfg := scenario.Defaults()
	cfg.Impl, cfg.Faults, cfg.Duration = "redis-single", []string{"pause-holder"}, scenario.Duration(time.Minute)
	cfg.Scenario = "redis-single_counter_pause-holder"
	resolved, err := runner.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join(cfg.Scenario, stamp)
	dir := filepath.Join(store, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var hist []byte
	for _, r := range recs {
		line, _ := json.Marshal(r)
		hist = append(append(hist, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), hist, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel), resolved
}

// hold takes the run directory's lock as a live coordinator holds it.
func hold(t *testing.T, dir string) *os.File {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// inProgress is a run 2 s into its minute: three clients, one acquisition,
// a critical section, a fault on c1 still active.
func inProgress() []history.Record {
	now := clock.Mono()
	t0 := now - int64(2*time.Second)
	at := func(ms int64) int64 { return t0 + ms*int64(time.Millisecond) }
	return []history.Record{
		{Index: 0, Process: history.NemesisProcess, Type: history.RunStart, F: "run", Asked: int64(time.Minute), Time: t0},
		{Index: 1, Process: 0, Seq: 1, Type: history.Invoke, F: history.FAcquire, Key: "lock-0", Time: at(10)},
		{Index: 2, Process: 0, Seq: 1, Type: history.OK, F: history.FAcquire, Key: "lock-0", Time: at(11)},
		{Index: 3, Process: 0, Seq: 2, Type: history.Invoke, F: history.FIncr, Key: "lock-0", Time: at(12)},
		{Index: 4, Process: 0, Seq: 2, Type: history.OK, F: history.FIncr, Key: "lock-0", Value: history.Int64(0), Time: at(30)},
		{Index: 5, Process: history.NemesisProcess, Type: history.FaultStart, F: "fault", Fault: "pause-holder", Target: "c1", Time: at(500)},
		{Index: 6, Process: 0, Seq: 3, Type: history.Invoke, F: history.FRelease, Key: "lock-0", Time: at(31)},
	}
}

// testStore holds a checked run that lost updates, one in progress (its
// lock held until the test releases it) and one killed during a fault,
// before its check.
type testStore struct {
	dir                    string
	done, running, stopped string
	runningCfg             runner.Resolved
	lock                   *os.File
}

func newTestStore(t *testing.T) testStore {
	t.Helper()
	s := testStore{dir: t.TempDir()}
	recs := historytest.Counter{Clients: 3, Keys: 1, Ops: 120, Seed: 1, Overlaps: 2}.Records()
	var cfg runner.Resolved
	s.done, cfg = writeRun(t, s.dir, "20261124T074351.274", recs)
	if _, err := runner.Analyze(filepath.Join(s.dir, s.done), cfg); err != nil {
		t.Fatal(err)
	}
	s.running, s.runningCfg = writeRun(t, s.dir, "20261125T100000.000", inProgress())
	sample := `{"time":1,"procs":[{"name":"coordinator","rss":47185920,"tcp":0,"clients":0},{"name":"redis-0","rss":12582912,"tcp":5,"clients":5}]}` + "\n"
	if err := os.WriteFile(filepath.Join(s.dir, s.running, reports.SamplesFile), []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	s.lock = hold(t, filepath.Join(s.dir, s.running))
	// Killed half a second in, during a fault.
	s.stopped, _ = writeRun(t, s.dir, "20261123T090000.000", inProgress())
	// A link out of the store: serving must not follow it.
	if err := os.Symlink("/etc", filepath.Join(s.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	// The links a run makes, which must not list a run twice.
	if err := os.Symlink(filepath.Join("redis-single_counter_pause-holder", "20261125T100000.000"), filepath.Join(s.dir, "latest")); err != nil {
		t.Fatal(err)
	}
	return s
}

// get requests target, following redirects (a path with ".." is sent
// to its clean form) within the site.
func get(t *testing.T, h http.Handler, target string) (int, string, http.Header) {
	t.Helper()
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if loc := rec.Result().Header.Get("Location"); rec.Code/100 == 3 && strings.HasPrefix(loc, "/") {
			target = loc
			continue
		}
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body), rec.Result().Header
	}
	t.Fatalf("%s: too many redirects", target)
	return 0, "", nil
}

// TestPages: every page of a store with a checked, a running and a killed
// run says what each is, never escapes the store, and holds no format
// error.
func TestPages(t *testing.T) {
	s := newTestStore(t)
	srv, err := New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cases := []struct {
		target string
		code   int
		want   []string
		not    []string
	}{
		{"/", 200, []string{
			`href="/_/run/` + s.done + `"`, "<b>UNSAFE</b>", `<td class="num">2</td>`, `href="/` + s.done + `/report.html"`,
			`href="/_/run/` + s.running + `"`, "<b>IN PROGRESS</b>", "running 2.0s/1m0s: 2 ops, 1 acquisitions, 0 lost update(s) so far; 0 of 1 strike(s) hit; fault active: pause-holder on c1",
			"<b>STOPPED</b>", "no results: the run ended before its check (killed?)", `http-equiv="refresh"`, "_/compare.html",
		}, []string{"escape"}},
		{"/_/run/" + s.done, 200, []string{`class="banner unsafe"`, "<b>UNSAFE</b> — 2 update(s) of the protected resource were lost.",
			"verdict   INVALID", `href="/` + s.done + `/report.html"`}, []string{`http-equiv="refresh"`}},
		{"/_/run/" + s.running, 200, []string{`<meta http-equiv="refresh" content="2">`, "<b>IN PROGRESS</b> — running",
			"<td>pause-holder</td><td>c1</td><td class=\"num\">0.500 s</td><td class=\"num\">active</td>",
			"<th>acquisitions</th><td class=\"num\">1</td>", "<th>memory</th><td>coordinator 45 MB, 1 server(s) 12 MB</td>"}, nil},
		{"/_/run/" + s.stopped, 200, []string{"<b>STOPPED</b>", "locktest analyze " + filepath.Join(s.dir, s.stopped),
			"stopped 0.5s/1m0s: 2 ops, 1 acquisitions, 0 lost update(s) so far; 0 of 1 strike(s) hit; fault active: pause-holder on c1 <small>(when the history ends)</small>",
			`<td class="num">never healed</td>`}, []string{`http-equiv="refresh"`}},
		{"/" + s.done + "/results.json", 200, []string{`"verdict": "invalid"`}, nil},
		{"/" + s.done + "/report.html", 200, []string{"UNSAFE"}, nil},
		{"/" + s.running + "/", 200, []string{"history.jsonl", "config.json"}, nil},
		{"/_/compare.html", 200, []string{`href="../` + s.done + `/report.html"`, "redis-single"}, nil},
		{"/_/compare.md", 200, []string{"| **redis-single** |"}, nil},
		{"/_/run/nowhere/20260101T000000.000", 404, nil, nil},
		{"/_/run/" + s.done + "/../../..", 404, nil, nil},
		{"/_/bogus.html", 404, nil, nil},
		{"/escape/passwd", 403, nil, []string{"root:"}},
		{"/../../etc/passwd", 404, nil, []string{"root:"}},
		{"/_/run/escape", 404, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			code, body, _ := get(t, srv, tc.target)
			if code != tc.code {
				t.Fatalf("status %d, want %d:\n%s", code, tc.code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("lacks %q:\n%s", w, body)
				}
			}
			for _, n := range append(tc.not, "%!", "<no value>") {
				if strings.Contains(body, n) {
					t.Errorf("holds %q:\n%s", n, body)
				}
			}
		})
	}
	if _, body, h := get(t, srv, "/_/compare.png"); h.Get("Content-Type") != "image/png" || !strings.HasPrefix(body, "\x89PNG") {
		t.Errorf("compare.png: %s, %q…", h.Get("Content-Type"), body[:min(8, len(body))])
	}
	// Three runs, the link to the running one not counted again.
	if _, body, _ := get(t, srv, "/"); strings.Count(body, `href="/_/run/`) != 3 {
		t.Errorf("index lists %d runs, want 3", strings.Count(body, `href="/_/run/`))
	}
}

// TestRunFinishes: the page of a run in progress shows its verdict, and
// stops reloading, once the coordinator wrote the results and let go.
func TestRunFinishes(t *testing.T) {
	s := newTestStore(t)
	srv, err := New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	page := "/_/run/" + s.running
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"running", func() {}, "<b>IN PROGRESS</b>"},
		{"checked, lock still held", func() {
			// The run reached its end: its coordinator marked it, made its
			// final read, then checked.
			var end []byte
			for i, r := range []history.Record{
				{Process: history.NemesisProcess, Type: history.RunEnd, F: "run"},
				{Process: history.NemesisProcess, Seq: 1, Type: history.Invoke, F: history.FRead, Key: "lock-0"},
				{Process: history.NemesisProcess, Seq: 1, Type: history.OK, F: history.FRead, Key: "lock-0", Value: history.Int64(1)},
			} {
				r.Index, r.Time = 7+i, clock.Mono()
				end = append(history.AppendJSON(end, &r), '\n')
			}
			f, err := os.OpenFile(filepath.Join(s.dir, s.running, reports.HistoryFile), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Write(end)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runner.Analyze(filepath.Join(s.dir, s.running), s.runningCfg); err != nil {
				t.Fatal(err)
			}
		}, "<b>IN PROGRESS</b>"},
		{"coordinator gone", func() { s.lock.Close() }, "<b>SAFE</b>"},
	}
	for _, st := range steps {
		st.do()
		_, body, _ := get(t, srv, page)
		if !strings.Contains(body, st.want) {
			t.Fatalf("%s: page lacks %q:\n%s", st.name, st.want, body)
		}
		if refresh := strings.Contains(body, `http-equiv="refresh"`); refresh != (st.want == "<b>IN PROGRESS</b>") {
			t.Errorf("%s: reloading %v", st.name, refresh)
		}
	}
}

// TestNew: a store that is no directory is refused.
func TestNew(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{filepath.Join(t.TempDir(), "missing"), file} {
		if srv, err := New(p); err == nil {
			srv.Close()
			t.Errorf("New(%s): no error", p)
		}
	}
}

// TestIndexGroups: the index folds an exploration's trials under it, with
// a link to its page and what it found, and keeps a store's own runs
// grouped by scenario; what an exploration's file says is text.
func TestIndexGroups(t *testing.T) {
	store := t.TempDir()
	done, cfg := writeRun(t, store, "20261124T074351.274", historytest.Counter{Clients: 3, Keys: 1, Ops: 60, Seed: 1}.Records())
	if _, err := runner.Analyze(filepath.Join(store, done), cfg); err != nil {
		t.Fatal(err)
	}
	expl := filepath.Join(store, "explore", "exec", "20261128T090000")
	trial, _ := writeRun(t, filepath.Join(expl, "runs"), "20261128T090001.000", inProgress())
	report := `{"impl": "<script>alert(1)</script>", "trials": [{}], "found": {"class": "inside-lease"}}`
	if err := os.WriteFile(filepath.Join(expl, explore.ReportJSON), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := New(store)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, body, _ := get(t, srv, "/")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		"<h2>redis-single_counter_pause-holder <small>1 run(s)</small></h2>",
		"<h2>exploration <code>explore/exec/20261128T090000</code> <small>1 run(s)</small></h2>",
		`<a href="/explore/exec/20261128T090000/explore.html">explore.html</a> — &lt;script&gt;alert(1)&lt;/script&gt;: lost updates, inside lease, in 1 trials`,
		"<details><summary>its 1 run(s)</summary>", `href="/_/run/explore/exec/20261128T090000/runs/` + trial + `"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("index lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Error("the index carries an exploration's text as markup")
	}
}
