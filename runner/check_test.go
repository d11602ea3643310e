package runner

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// runDirFrom makes a run directory in a temporary directory holding the
// config.json of src and recs as its history, and resolves its config.
func runDirFrom(t *testing.T, src string, recs []history.Record, edit func(*scenario.Config)) (string, Resolved) {
	t.Helper()
	cfg, err := scenario.LoadConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&cfg)
	}
	resolved, err := Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for i := range recs {
		out = append(history.AppendJSON(out, &recs[i]), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, resolved
}

// TestRecheckMatchesAnalyze: analyze --no-report (Recheck), which streams
// the history, gives the Results analyze (Analyze) gives it read whole,
// field for field (verdicts, violations named, first violation, stats,
// efficacy, lease class, metrics, health, notes), on real runs: redis
// unfenced under pause-holder (invalid, lost updates) and fenced (valid,
// overlapping holds), unfenced under kill-holder (crashed holders) and
// under four pause-holder strikes on 8 clients; the stored 60 s run, whole
// and cut off mid-line; generated histories with overlaps, and one
// appended too far out of time order to stream, which Recheck reads whole
// instead.
func TestRecheckMatchesAnalyze(t *testing.T) {
	stored := "../reports/testdata/run-60s-8c"
	storedRecs := historytest.ReadGz(t, filepath.Join(stored, "history.jsonl.gz"))
	late := historytest.Counter{Clients: 4, Keys: 1, Ops: 30_000, Seed: 1}.Records()
	late = append(late, history.Record{Index: len(late), Process: 0, Seq: 1 << 30, Type: history.Invoke, F: history.FAcquire,
		Key: late[0].Key, Time: late[0].Time + 1})
	type run struct {
		name string
		src  string
		recs []history.Record
		edit func(*scenario.Config)
		// cut cuts the history file's last line in half, as a killed run
		// leaves it.
		cut bool
		// unstreamable: a record too late to stream (checkStream says
		// so), which Recheck reads whole.
		unstreamable bool
		verdict      checker.Verdict
	}
	runs := []run{
		{name: "redis unfenced, pause-holder", src: "testdata/unfenced-pause", verdict: checker.Invalid},
		{name: "redis fenced, pause-holder", src: "testdata/fenced-pause", verdict: checker.Valid},
		{name: "redis unfenced, kill-holder", src: "testdata/kill-holder", verdict: checker.Valid},
		{name: "redis unfenced, pause-holder, 20 s, 8 clients", src: "testdata/pause-20s-8c", verdict: checker.Invalid},
		{name: "stored 60 s run", src: stored, recs: storedRecs, verdict: checker.Invalid},
		{name: "stored 60 s run, cut off", src: stored, recs: storedRecs, cut: true, verdict: checker.Invalid},
		{name: "generated, overlaps", src: stored, recs: historytest.Counter{Clients: 8, Keys: 3, Ops: 50_000, Seed: 7,
			Overlaps: 3, Unknowns: 2, LateOverlap: true}.Records(), edit: func(c *scenario.Config) { c.Clients, c.Keys = 8, 3 }, verdict: checker.Invalid},
		{name: "generated, valid", src: stored, recs: historytest.Counter{Clients: 8, Keys: 2, Ops: 20_000, Seed: 8}.Records(),
			edit: func(c *scenario.Config) { c.Clients, c.Keys = 8, 2 }, verdict: checker.Valid},
		{name: "generated, out of time order", src: stored, recs: late, edit: func(c *scenario.Config) { c.Clients, c.Keys = 4, 1 },
			unstreamable: true, verdict: checker.Valid},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			recs := r.recs
			if recs == nil {
				recs = historytest.ReadGz(t, filepath.Join(r.src, "history.jsonl.gz"))
			}
			dir, cfg := runDirFrom(t, r.src, recs, r.edit)
			if r.cut {
				path := filepath.Join(dir, reports.HistoryFile)
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, data[:len(data)-20], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := checkStream(filepath.Join(dir, reports.HistoryFile), cfg, checker.Options{})
			if errors.Is(err, checker.ErrOutOfOrder) != r.unstreamable {
				t.Fatalf("streamed: %v; want out of order: %v", err, r.unstreamable)
			}
			streamed, err := Recheck(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Analyze(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if whole.Verdict != r.verdict || whole.Truncated != r.cut {
				t.Fatalf("analyze: verdict %s, truncated %v; want %s, %v: not the history meant", whole.Verdict, whole.Truncated, r.verdict, r.cut)
			}
			got, _ := json.MarshalIndent(streamed, "", " ")
			want, _ := json.MarshalIndent(whole, "", " ")
			if string(got) != string(want) {
				t.Errorf("recheck gives\n%s\nanalyze gives\n%s", got, want)
			}

			// Too long to draw whole, as a soak's history is: checked as
			// it is read, the same results but for a note of what the
			// plots show, and the report drawn.
			defer func(n int64) { wholeHistoryBytes = n }(wholeHistoryBytes)
			wholeHistoryBytes = 0
			long, err := Analyze(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(long.Notes, func(n string) bool { return strings.Contains(n, "too long to draw whole") })
			if i < 0 || r.unstreamable {
				if i >= 0 || !r.unstreamable {
					t.Fatalf("notes %q: want one of the plots' window unless the history cannot stream", long.Notes)
				}
			} else {
				long.Notes = slices.Delete(long.Notes, i, i+1)
			}
			if got, _ := json.MarshalIndent(long, "", " "); string(got) != string(want) {
				t.Errorf("analyze of a history too long to draw gives\n%s\nanalyze gives\n%s", got, want)
			}
			if _, err := os.Stat(filepath.Join(dir, reports.TimelinePNG)); err != nil {
				t.Error(err)
			}

			// In compressed segments, as a long run leaves it, the same.
			segment(t, filepath.Join(dir, reports.HistoryFile))
			segmented, err := Recheck(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.MarshalIndent(segmented, "", " "); string(got) != string(want) {
				t.Errorf("recheck of the history in segments gives\n%s\nanalyze gives\n%s", got, want)
			}
		})
	}
}

// segment cuts the history at path into two compressed segments (a third
// each) and the live file's rest, as history.Writer leaves a long one.
func segment(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rest := data
	for n := 1; n <= 2; n++ {
		cut := bytes.IndexByte(rest[len(data)/3:], '\n') + len(data)/3 + 1
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		zw.Write(rest[:cut])
		zw.Close()
		if err := os.WriteFile(fmt.Sprintf("%s.%06d.gz", path, n), zipped.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		rest = rest[cut:]
	}
	if err := os.WriteFile(path, rest, 0o644); err != nil {
		t.Fatal(err)
	}
}
