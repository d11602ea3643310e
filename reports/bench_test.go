package reports_test

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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

var huge = flag.Bool("huge", false, "BenchmarkAnalyzeFloor analyzes 10M ops too (minutes, gigabytes)")

// floorSetup gives the floor benchmarks' history sizes (1M ops; 10M too
// with -huge) and a locktest binary built for them.
func floorSetup(b *testing.B) ([]int, string) {
	sizes := []int{1_000_000}
	if *huge {
		sizes = append(sizes, 10_000_000)
	}
	locktest := filepath.Join(b.TempDir(), "locktest")
	if out, err := exec.Command("go", "build", "-o", locktest, "../cmd/locktest").CombinedOutput(); err != nil {
		b.Fatalf("build locktest: %v\n%s", err, out)
	}
	return sizes, locktest
}

// floorHistory is the history both floor benchmarks read: 8 clients, 64
// keys, a lost update planted in its last thousandth.
func floorHistory(ops int) historytest.Counter {
	return historytest.Counter{Clients: 8, Keys: 64, Ops: ops, Seed: 1, LateOverlap: true}
}

// BenchmarkAnalyzeFloor times `locktest analyze` of a synthetic counter
// history (8 clients, 64 keys, 1M ops; 10M with -huge) against the floor
// of merely reading it: each iteration decodes the history as analyze
// does (history.ReadFile), checks it without writing the report
// (runner.Recheck, analyze --no-report), then analyzes it with its report
// (runner.Analyze). It reports the times per iteration and the check's and
// analyze's multiples of the decode (check-x-decode, x-decode), which a
// loaded machine stretches less than the times themselves. The history
// has a lost update planted in its last thousandth, which both must find.
// Last, it runs `locktest analyze` once as a command and reports its peak
// resident set (peak-MB): the memory a user's machine needs.
//
//	go test -run '^$' -bench AnalyzeFloor -benchtime 3x ./reports [-args -huge]
func BenchmarkAnalyzeFloor(b *testing.B) {
	sizes, locktest := floorSetup(b)
	for _, ops := range sizes {
		b.Run(fmt.Sprintf("ops=%d", ops), func(b *testing.B) {
			g := floorHistory(ops)
			dir, resolved := runDirOf(b, g)
			path := filepath.Join(dir, reports.HistoryFile)
			var decode, check, analyze time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				// Analyze reads its own: these records are garbage at once.
				if _, err := history.ReadFile(path); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				checked, err := runner.Recheck(dir, resolved)
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				analyzed, err := runner.Analyze(dir, resolved)
				if err != nil {
					b.Fatal(err)
				}
				decode, check, analyze = decode+t1.Sub(t0), check+t2.Sub(t1), analyze+time.Since(t2)
				for _, res := range []reports.Results{checked, analyzed} {
					if res.Verdict != checker.Invalid || res.Checks.Stats.Lost != 1 || len(res.Checks.Resource.Violations) != 1 {
						b.Fatalf("verdict %s, %d lost, %d resource violations: want the planted lost update found",
							res.Verdict, res.Checks.Stats.Lost, len(res.Checks.Resource.Violations))
					}
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(decode.Seconds()/n, "decode-s/op")
			b.ReportMetric(check.Seconds()/n, "check-s/op")
			b.ReportMetric(analyze.Seconds()/n, "analyze-s/op")
			b.ReportMetric(check.Seconds()/decode.Seconds(), "check-x-decode")
			b.ReportMetric(analyze.Seconds()/decode.Seconds(), "x-decode")
			b.ReportMetric(float64(peakRSS(b, locktest, dir))/(1<<20), "peak-MB")
		})
	}
}

// peakRSS runs `locktest analyze [args] dir` and returns its peak
// resident set in bytes; the planted lost update makes it exit 1
// (invalid), as it must.
func peakRSS(b *testing.B, locktest, dir string, args ...string) int64 {
	peak, _ := peakOf(b, exec.Command(locktest, append(append([]string{"analyze"}, args...), dir)...), "verdict   INVALID")
	return peak
}

// peakOf runs cmd, wants it to exit 0 or 1 (invalid) saying want, and
// returns its peak resident set in bytes and how long it ran. It is
// measured by time(1), which forks it: Go starts a command with vfork, and
// Linux then counts the benchmark's own peak, gigabytes after a decode, as
// the command's.
func peakOf(b *testing.B, cmd *exec.Cmd, want string) (int64, time.Duration) {
	timed := exec.Command("/usr/bin/time", append([]string{"-f", "peak-kb %M elapsed-s %e", cmd.Path}, cmd.Args[1:]...)...)
	timed.Env = cmd.Env
	out, err := timed.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) || !strings.Contains(string(out), want) {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	i := strings.LastIndex(string(out), "peak-kb ")
	var kb int64
	var s float64
	if _, err := fmt.Sscanf(string(out[max(i, 0):]), "peak-kb %d elapsed-s %g", &kb, &s); i < 0 || err != nil {
		b.Fatalf("%s: no peak in time's output: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return kb << 10, time.Duration(s * float64(time.Second))
}

// streamCheckEnv names the history TestStreamCheckProcess checks.
const streamCheckEnv = "LOCKTEST_STREAM_CHECK"

// TestStreamCheckProcess is BenchmarkCheckStream's process that checks a
// history as it reads it (checker.CheckFile) and nothing else, so that its
// peak resident set is the streaming check's; it does nothing unless
// streamCheckEnv names the history.
func TestStreamCheckProcess(t *testing.T) {
	path := os.Getenv(streamCheckEnv)
	if path == "" {
		t.Skip("only as BenchmarkCheckStream's process")
	}
	rep, err := checker.CheckFile(path, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("resource %s, %d lost\n", rep.Resource.Verdict, rep.Stats.Lost)
}

// BenchmarkCheckStream times checking a synthetic counter history as it
// is read (checker.CheckFile: verdicts, stats, visualizations, no
// explanations) against merely decoding it whole (history.ReadFile),
// interleaved in each iteration, on the history BenchmarkAnalyzeFloor
// uses (8 clients, 64 keys, 1M ops; 10M with -huge; a lost update planted
// in its last thousandth, which the check must find). It reports the
// times, the check's multiple of the decode (stream-x-decode), the peak
// resident set and the time of a process doing the streaming check alone
// (stream-peak-MB, stream-process-s: the test binary's
// TestStreamCheckProcess) and the peak and time of `locktest analyze
// --no-report` (no-report-peak-MB, no-report-s), which streams the history
// too, and reads it again to explain the lost update.
//
//	go test -run '^$' -bench CheckStream -benchtime 3x ./reports [-args -huge]
func BenchmarkCheckStream(b *testing.B) {
	sizes, locktest := floorSetup(b)
	for _, ops := range sizes {
		b.Run(fmt.Sprintf("ops=%d", ops), func(b *testing.B) {
			g := floorHistory(ops)
			dir, _ := runDirOf(b, g)
			path := filepath.Join(dir, reports.HistoryFile)
			var decode, stream time.Duration
			b.ResetTimer()
			for range b.N {
				// Each starts from a collected heap, as in a process of its own.
				runtime.GC()
				t0 := time.Now()
				if _, err := history.ReadFile(path); err != nil {
					b.Fatal(err)
				}
				decode += time.Since(t0)
				runtime.GC()
				t1 := time.Now()
				rep, err := checker.CheckFile(path, checker.Options{})
				if err != nil {
					b.Fatal(err)
				}
				stream += time.Since(t1)
				if rep.Resource.Verdict != checker.Invalid || rep.Stats.Lost != 1 {
					b.Fatalf("resource %s, %d lost: want the planted lost update found", rep.Resource.Verdict, rep.Stats.Lost)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(decode.Seconds()/n, "decode-s/op")
			b.ReportMetric(stream.Seconds()/n, "stream-s/op")
			b.ReportMetric(stream.Seconds()/decode.Seconds(), "stream-x-decode")
			cmd := exec.Command(os.Args[0], "-test.run", "^TestStreamCheckProcess$", "-test.v")
			cmd.Env = append(os.Environ(), streamCheckEnv+"="+path)
			peak, took := peakOf(b, cmd, "resource invalid, 1 lost")
			b.ReportMetric(float64(peak)/(1<<20), "stream-peak-MB")
			b.ReportMetric(took.Seconds(), "stream-process-s")
			peak, took = peakOf(b, exec.Command(locktest, "analyze", "--no-report", dir), "verdict   INVALID")
			b.ReportMetric(float64(peak)/(1<<20), "no-report-peak-MB")
			b.ReportMetric(took.Seconds(), "no-report-s")
		})
	}
}
