package reports_test

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// stored is a real run kept as test data: redis-single, counter, 8
// clients, 60 s, pause-holder every ~3 s (12 faults, 12 lost updates).
const stored = "testdata/run-60s-8c"

// BenchmarkReport60s times what a user waits for once a 60 s run with 8
// clients has ended, on a stored history (no server):
//
//   - analyze: read the history, both porcupine checks, metrics, report;
//   - write: results.json, summary, porcupine's visualizations, the three
//     plots (PNG, timeline SVG) and report.html from checked results.
//
// It also reports the bytes the history and report files take in the run
// directory (server and worker logs excluded).
func BenchmarkReport60s(b *testing.B) {
	cfg, err := scenario.LoadConfig(stored)
	if err != nil {
		b.Fatal(err)
	}
	resolved, err := runner.Resolve(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("analyze", func(b *testing.B) {
		var res reports.Results
		for range b.N {
			b.StopTimer()
			dir := runDir(b)
			b.StartTimer()
			if res, err = runner.Analyze(dir, resolved); err != nil {
				b.Fatal(err)
			}
		}
		if res.Verdict != checker.Invalid || res.Checks.Stats.Lost == 0 {
			b.Fatalf("verdict %s with %d lost: not the stored run", res.Verdict, res.Checks.Stats.Lost)
		}
		b.ReportMetric(float64(res.Records), "records")
		b.ReportMetric(float64(dirBytes(b, res.Dir)), "dir-bytes")
	})
	b.Run("write", func(b *testing.B) {
		dir := runDir(b)
		res, err := runner.Analyze(dir, resolved)
		if err != nil {
			b.Fatal(err)
		}
		recs, err := history.ReadFile(filepath.Join(dir, reports.HistoryFile))
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if err := reports.Write(res, recs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// runDir makes a run directory holding the stored config and history.
func runDir(b testing.TB) string {
	dir := b.TempDir()
	cfg, err := os.ReadFile(filepath.Join(stored, scenario.ConfigFile))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), cfg, 0o644); err != nil {
		b.Fatal(err)
	}
	in, err := os.Open(filepath.Join(stored, reports.HistoryFile+".gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		b.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkAnalyzeLarge times `locktest analyze` of a valid synthetic
// counter history of 1M client ops and 8 clients, on 64 keys and on one
// (no server): "report" is the whole analyze, "no-report" is analyze
// --no-report. It reports the bytes the written files take.
//
//	go test -run '^$' -bench AnalyzeLarge -benchtime 1x ./reports
//
// Peak memory is the process's, so it is measured on the command instead:
// /usr/bin/time -v locktest analyze <dir> on a directory this benchmark's
// runDirOf makes.
func BenchmarkAnalyzeLarge(b *testing.B) {
	for _, keys := range []int{64, 1} {
		g := historytest.Counter{Clients: 8, Keys: keys, Ops: 1_000_000, Seed: 1}
		dir, resolved := runDirOf(b, g)
		for _, write := range []bool{true, false} {
			name, analyze := fmt.Sprintf("keys=%d/report", keys), runner.Analyze
			if !write {
				name, analyze = fmt.Sprintf("keys=%d/no-report", keys), runner.Recheck
			}
			b.Run(name, func(b *testing.B) {
				var res reports.Results
				var err error
				for range b.N {
					if res, err = analyze(dir, resolved); err != nil {
						b.Fatal(err)
					}
				}
				if res.Verdict != checker.Valid {
					b.Fatalf("verdict %s, want valid", res.Verdict)
				}
				if write {
					b.ReportMetric(float64(dirBytes(b, dir)-historyBytes(b, dir)), "report-bytes")
				}
			})
		}
	}
}

// runDirOf makes a run directory holding g's history and the stored run's
// config with g's clients and keys.
func runDirOf(b *testing.B, g historytest.Counter) (string, runner.Resolved) {
	cfg, err := scenario.LoadConfig(stored)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Clients, cfg.Keys = g.Clients, g.Keys
	resolved, err := runner.Resolve(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	data, err := json.Marshal(cfg)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, scenario.ConfigFile), data, 0o644)
	}
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Write(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, resolved
}

func historyBytes(b *testing.B, dir string) int64 {
	info, err := os.Stat(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		b.Fatal(err)
	}
	return info.Size()
}
