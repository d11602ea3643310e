package live

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/reports"
)

func sampleLine(t *testing.T, tm int64, coordMB int64) string {
	t.Helper()
	b, err := json.Marshal(reports.Sample{Time: tm, Procs: []reports.ProcSample{
		{Name: reports.CoordinatorName, RSS: coordMB << 20},
		{Name: "redis-0", RSS: 12 << 20}, {Name: "resource", RSS: 11 << 20},
		{Name: "redis-1", Error: "not running"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLatestSample: the newest whole sample, past one being written, also
// at the end of a file longer than what is read of it; none in a file
// without a whole one, or no file.
func TestLatestSample(t *testing.T) {
	long := strings.Repeat(sampleLine(t, 1, 40)+"\n", tailBytes/len(sampleLine(t, 1, 40))+10)
	for _, tc := range []struct {
		name, content string
		want          int64 // the sample's time; 0: none
	}{
		{"one", sampleLine(t, 7, 40) + "\n", 7},
		{"the last being written", sampleLine(t, 7, 40) + "\n" + sampleLine(t, 8, 40)[:20], 7},
		{"past the part read", long + sampleLine(t, 9, 40) + "\n", 9},
		{"none whole", `{"time":3,"pro`, 0},
		{"empty", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), reports.SamplesFile)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			s, ok := latestSample(path)
			if ok != (tc.want != 0) || s.Time != tc.want {
				t.Errorf("latestSample = time %d, %v; want time %d", s.Time, ok, tc.want)
			}
		})
	}
	if _, ok := latestSample(filepath.Join(t.TempDir(), "none")); ok {
		t.Error("a sample from no file")
	}
}

// TestMemoryText sums the servers read and leaves out the one that was not.
func TestMemoryText(t *testing.T) {
	var s reports.Sample
	if err := json.Unmarshal([]byte(sampleLine(t, 1, 45)), &s); err != nil {
		t.Fatal(err)
	}
	if got, want := MemoryText(s), "coordinator 45 MB, 2 server(s) 23 MB"; got != want {
		t.Errorf("MemoryText = %q, want %q", got, want)
	}
}

// TestDisplayMemory: while the clients run, the status line ends with the
// newest sample's memory; while the servers start, it has none yet.
func TestDisplayMemory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, reports.SamplesFile), []byte(sampleLine(t, 1, 45)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	d := newDisplay(&out, Plain, time.Hour)
	d.Phase(Starting, dir)
	d.Phase(Running, dir)
	d.Close()
	if got, want := out.String(), "locktest run: running; memory coordinator 45 MB, 2 server(s) 23 MB\n"; got != want {
		t.Errorf("output:\n got %q\nwant %q", got, want)
	}
}
