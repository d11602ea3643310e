package live

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// TestDisplay: on a terminal the status line is redrawn in place and
// erased before any other line and at the end; in plain mode each phase
// is a line of its own, from the moment the clients run, and other lines
// pass through untouched. The heartbeat is off, so the output is exact.
func TestDisplay(t *testing.T) {
	dir := t.TempDir()
	var hist []byte
	for _, r := range cycles[:4] { // before the run-start mark: no elapsed time to print
		line, _ := json.Marshal(r)
		hist = append(append(hist, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), hist, 0o644); err != nil {
		t.Fatal(err)
	}
	const clr = "\r\033[K"
	counts := ": 2 ops, 1 acquisitions, 0 lost update(s) so far"
	status := "running" + counts
	cases := []struct {
		mode Mode
		want string
	}{
		{TTY, clr + "starting servers" + counts + clr + status + clr + "warning\n" + clr + status + clr},
		{Plain, "locktest run: " + status + "\nwarning\n"},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			var out strings.Builder
			d := newDisplay(&out, tc.mode, time.Hour)
			d.Phase(Starting, dir)
			d.Phase(Running, dir)
			d.Write([]byte("warning\n"))
			d.Close()
			d.Write([]byte("")) // after Close: no status line comes back
			if got := out.String(); got != tc.want {
				t.Errorf("output:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestFollower: a follower returns each complete line once, keeps a line
// still being written for the next poll, and skips a damaged line.
func TestFollower(t *testing.T) {
	path := filepath.Join(t.TempDir(), reports.HistoryFile)
	f := history.Follow(path)
	steps := []struct {
		appended string
		want     int // records returned by the poll after appending
	}{
		{"", 0}, // not created yet
		{`{"index":0,"process":0,"type":"invoke","f":"acquire","time":1}` + "\n" + `{"index":1,"pro`, 1},
		{`cess":0,"type":"ok","f":"acquire","time":2}` + "\n", 1},
		{"not json\n" + `{"index":2,"process":0,"type":"invoke","f":"incr","time":3}` + "\n", 1},
		{"", 0},
	}
	var tally Tally
	for i, s := range steps {
		if s.appended != "" {
			file, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			file.WriteString(s.appended)
			file.Close()
		}
		recs, err := f.Poll()
		if err != nil || len(recs) != s.want {
			t.Fatalf("step %d: %d records, %v; want %d", i, len(recs), err, s.want)
		}
		tally.Add(recs...)
	}
	if tally.Ops != 1 || tally.Acquisitions != 1 {
		t.Errorf("tally %+v, want the one acquire", tally)
	}
}
