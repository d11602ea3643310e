package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
)

// growingSamples are n samples a second apart from start: a coordinator
// whose memory grows by 1 MB a second, and a server, redis-0, with no
// client at first and 5 in the middle, and one connection of its own.
func growingSamples(start int64, n int) []Sample {
	var out []Sample
	for i := range n {
		tcp := 0
		if i > 0 && i < n-1 {
			tcp = 5
		}
		out = append(out, Sample{Time: start + int64(i)*int64(time.Second), Procs: []ProcSample{
			{Name: CoordinatorName, Pid: 1, RSS: int64(10+i) << 20, Heap: 4 << 20, FDs: 20, TCP: 2},
			{Name: "redis-0", Kind: "redis", Pid: 2, RSS: 3 << 20, FDs: 10, TCP: tcp + 1, Clients: tcp},
		}})
	}
	return out
}

// TestSummarize: first, settled, last and peak memory; connections at
// start and end; a leak only for a server that kept more connections at
// the end than at the start as the same process; the ones never read.
func TestSummarize(t *testing.T) {
	const mb = 1 << 20
	redis := func(pid, clients int, rss int64) ProcSample {
		return ProcSample{Name: "redis-0", Kind: "redis", Pid: pid, RSS: rss, TCP: clients + 2, Clients: clients}
	}
	// etcd is a member whose lease count is n (none read when n < 0, why
	// in serr).
	etcd := func(pid, n int, serr string) ProcSample {
		p := ProcSample{Name: "etcd-0", Kind: "etcd", Pid: pid, RSS: 20 * mb, SessionsWhat: "leases", SessionsError: serr}
		if n >= 0 {
			p.Sessions = &n
		}
		return p
	}
	at := func(sec int, ps ...ProcSample) Sample {
		return Sample{Time: int64(sec) * int64(time.Second), Procs: ps}
	}
	for _, tc := range []struct {
		name    string
		samples []Sample
		want    *Resources
	}{
		{"none", nil, nil},
		{"the coordinator grows, the server lets its clients go", growingSamples(0, 13), &Resources{Samples: 13, MaxGap: 1,
			Procs: []ProcResources{
				{Name: CoordinatorName, Samples: 13, FirstRSS: 10 * mb, SettledRSS: 11 * mb, LastRSS: 22 * mb, PeakRSS: 22 * mb, Growth: 1, TCPPeak: 2},
				{Name: "redis-0", Kind: "redis", Samples: 13, FirstRSS: 3 * mb, SettledRSS: 3 * mb, LastRSS: 3 * mb, PeakRSS: 3 * mb, ClientsPeak: 5, TCPPeak: 6},
			}}},
		{"a server that keeps two connections", []Sample{at(0, redis(7, 1, 4*mb)), at(60, redis(7, 9, 8*mb)), at(120, redis(7, 3, 5*mb))}, &Resources{Samples: 3, MaxGap: 60,
			Procs: []ProcResources{{Name: "redis-0", Kind: "redis", Samples: 3, FirstRSS: 4 * mb, SettledRSS: 8 * mb, LastRSS: 5 * mb, PeakRSS: 8 * mb, Growth: -0.375,
				ClientsStart: 1, ClientsEnd: 3, ClientsPeak: 9, TCPPeak: 11, LeakedClients: 2}},
			Leaks: []string{"redis-0 held 2 more client connection(s) at the end, after the clients closed, than at the start (1 → 3)"}}},
		{"a restarted server leaks nothing", []Sample{at(0, redis(7, 1, 4*mb)), at(1, ProcSample{Name: "redis-0", Kind: "redis", Error: "not running"}), at(2, redis(8, 3, 4*mb))}, &Resources{Samples: 3, MaxGap: 1,
			Procs: []ProcResources{{Name: "redis-0", Kind: "redis", Samples: 2, FirstRSS: 4 * mb, SettledRSS: 4 * mb, LastRSS: 4 * mb, PeakRSS: 4 * mb, ClientsStart: 1, ClientsEnd: 3, ClientsPeak: 3, TCPPeak: 5}}}},
		{"a server down at the end leaks nothing", []Sample{at(0, redis(7, 1, 4*mb)), at(1, redis(7, 5, 4*mb)), at(2, ProcSample{Name: "redis-0", Kind: "redis", Error: "gone"})}, &Resources{Samples: 3, MaxGap: 1,
			Procs: []ProcResources{{Name: "redis-0", Kind: "redis", Samples: 2, FirstRSS: 4 * mb, SettledRSS: 4 * mb, LastRSS: 4 * mb, PeakRSS: 4 * mb, ClientsStart: 1, ClientsEnd: 5, ClientsPeak: 5, TCPPeak: 7}}}},
		{"etcd keeps a lease", []Sample{at(0, etcd(5, 0, "")), at(1, etcd(5, 6, "")), at(2, etcd(5, -1, "etcd-0: count leases: deadline exceeded")), at(3, etcd(5, 1, ""))}, &Resources{Samples: 4, MaxGap: 1,
			Procs: []ProcResources{{Name: "etcd-0", Kind: "etcd", Samples: 4, FirstRSS: 20 * mb, SettledRSS: 20 * mb, LastRSS: 20 * mb, PeakRSS: 20 * mb,
				Sessions: &SessionResources{What: "leases", Start: 0, End: 1, Peak: 6, Leaked: 1}}},
			Leaks: []string{"etcd-0 held 1 more session(s) (leases) at the end, after the clients closed, than at the start (0 → 1)"}}},
		{"etcd lets its leases go", []Sample{at(0, etcd(5, 0, "")), at(1, etcd(5, 6, "")), at(2, etcd(5, 0, ""))}, &Resources{Samples: 3, MaxGap: 1,
			Procs: []ProcResources{{Name: "etcd-0", Kind: "etcd", Samples: 3, FirstRSS: 20 * mb, SettledRSS: 20 * mb, LastRSS: 20 * mb, PeakRSS: 20 * mb,
				Sessions: &SessionResources{What: "leases", Start: 0, End: 0, Peak: 6}}}}},
		// Not read at the end: what it held then is not known.
		{"sessions unread at the end leak nothing", []Sample{at(0, etcd(5, 0, "")), at(1, etcd(5, 6, "")), at(2, etcd(5, -1, "etcd-0: count leases: deadline exceeded"))}, &Resources{Samples: 3, MaxGap: 1,
			Procs: []ProcResources{{Name: "etcd-0", Kind: "etcd", Samples: 3, FirstRSS: 20 * mb, SettledRSS: 20 * mb, LastRSS: 20 * mb, PeakRSS: 20 * mb,
				Sessions: &SessionResources{What: "leases", Start: 0, End: 6, Peak: 6}}}}},
		{"sessions of another process at the end leak nothing", []Sample{at(0, etcd(5, 0, "")), at(1, etcd(6, 2, ""))}, &Resources{Samples: 2, MaxGap: 1,
			Procs: []ProcResources{{Name: "etcd-0", Kind: "etcd", Samples: 2, FirstRSS: 20 * mb, SettledRSS: 20 * mb, LastRSS: 20 * mb, PeakRSS: 20 * mb,
				Sessions: &SessionResources{What: "leases", Start: 0, End: 2, Peak: 2}}}}},
		{"the user's server without a pid", []Sample{at(0, ProcSample{Name: "user-0", Error: "no pid"}), at(1, ProcSample{Name: "user-0", Error: "no pid"})}, &Resources{Samples: 2, MaxGap: 1,
			Unsampled: []string{"user-0: no pid"}}},
		{"an error that names the server", []Sample{at(0, ProcSample{Name: "server-0", Error: "server-0 (127.0.0.1:6379): no pid given (--server-pids)"})}, &Resources{Samples: 1,
			Unsampled: []string{"server-0 (127.0.0.1:6379): no pid given (--server-pids)"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.samples); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Summarize =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestResourcesLine: the summary's line names the coordinator's memory and
// each server's memory and connections.
func TestResourcesLine(t *testing.T) {
	got := Summarize(growingSamples(0, 13)).Line()
	want := "coordinator 10→22 MB; redis-0 3.0→3.0 MB, clients 0→0 (peak 5)"
	if got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
}

// TestReadSamples reads what a run wrote, stops at a line a killed run cut
// off, and refuses a damaged line in the middle.
func TestReadSamples(t *testing.T) {
	dir := t.TempDir()
	if s, err := ReadSamples(dir); s != nil || err != nil {
		t.Fatalf("no samples file: %v, %v; want none and no error", s, err)
	}
	write := func(lines ...string) {
		if err := os.WriteFile(filepath.Join(dir, SamplesFile), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	one := `{"time":1,"procs":[{"name":"coordinator","rss":100,"tcp":0}]}`
	write(one, one, `{"time":3,"procs":[{"na`)
	s, err := ReadSamples(dir)
	if err != nil || len(s) != 2 || s[1].Procs[0].RSS != 100 {
		t.Errorf("cut off last line: %+v, %v; want the 2 whole samples", s, err)
	}
	write(one, `{"time":2,"procs":[{"na`, one)
	if _, err := ReadSamples(dir); err == nil {
		t.Error("a damaged line in the middle: no error")
	}
}

// TestSummaryResources: the summary's memory line, a line for each
// process never read and one for each leak; nothing for a run without
// samples.
func TestSummaryResources(t *testing.T) {
	samples := append(growingSamples(0, 13), Sample{Time: 13 * int64(time.Second), Procs: []ProcSample{
		{Name: "redis-0", Kind: "redis", Pid: 2, RSS: 3 << 20, TCP: 5, Clients: 4}, {Name: "user-0", Error: "no pid (--server-pids)"}}})
	r := Results{Dir: t.TempDir(), Resources: Summarize(samples)}
	var sum bytes.Buffer
	Summary(&sum, r)
	for _, want := range []string{
		"memory    coordinator 10→22 MB; redis-0 3.0→3.0 MB, clients 0→4 (peak 5)\n",
		"          not sampled: user-0: no pid (--server-pids)\n",
		"leak      redis-0 held 4 more client connection(s) at the end, after the clients closed, than at the start (0 → 4)\n",
	} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary:\n%s\nwant the line %q", sum.String(), want)
		}
	}
	sum.Reset()
	Summary(&sum, Results{Dir: t.TempDir()})
	if strings.Contains(sum.String(), "memory") {
		t.Errorf("a run without samples:\n%s", sum.String())
	}
}

// TestWriteResources: a run directory's samples reach results.json and
// the report, as plots of memory, connections, the run's figures and the
// sessions. About 1 s.
func TestWriteResources(t *testing.T) {
	recs := storedHistory(t)
	dir := t.TempDir()
	var lines []string
	for i, s := range growingSamples(recs[0].Time, 20) {
		// The run's figures, and redis-0's count of its sessions.
		s.Run = &RunFigures{Ops: 10 * i, Lost: i / 10, Strikes: i / 5, Effective: i / 7}
		n := s.Procs[1].Clients
		s.Procs[1].Sessions, s.Procs[1].SessionsWhat = &n, "connected clients"
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, SamplesFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := Results{Scenario: "redis-single_counter_pause-holder", Dir: dir, Checks: checker.Check(recs, checker.Options{})}
	if err := Write(res, recs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Resources == nil || len(got.Resources.Procs) != 2 || got.Resources.Procs[0].LastRSS != 29<<20 {
		t.Errorf("results.json resources: %+v, want the coordinator's and redis-0's, the coordinator ending at 29 MB", got.Resources)
	}
	html, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{MemoryPNG, ClientsPNG, FiguresPNG, SessionsPNG} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	for _, id := range []string{`id="memory"`, `id="connections"`, `id="figures"`, `id="sessions"`} {
		if !strings.Contains(string(html), id) {
			t.Errorf("report.html has no figure %s", id)
		}
	}
}

// TestSecondTicksFromBelowZero: an axis that starts before the run, as the
// samples' does, labels its zero "0", not "-0", and its minor ticks below
// zero not at all (math.Mod keeps the sign).
func TestSecondTicksFromBelowZero(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{-1, 60, []string{"0", "10", "20", "30", "40", "50", "60"}},
		{-1, 15, []string{"0", "2", "4", "6", "8", "10", "12", "14"}},
	} {
		var labels []string
		for _, tick := range (secondTicks{}).Ticks(tc.lo, tc.hi) {
			if tick.Label != "" {
				labels = append(labels, tick.Label)
			}
		}
		if !reflect.DeepEqual(labels, tc.want) {
			t.Errorf("labels from %v to %v: %q, want %q", tc.lo, tc.hi, labels, tc.want)
		}
	}
}
