package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// TestFollowsTheHistory: the page of a run in progress tallies only what
// its history gained since the last request: records appended count, a
// line half written counts once finished, bytes already read are not
// read again (here overwritten with garbage, which a second reading would
// stop at).
func TestFollowsTheHistory(t *testing.T) {
	s := newTestStore(t)
	srv, err := New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hist := filepath.Join(s.dir, s.running, reports.HistoryFile)
	appendBytes := func(b []byte) {
		f, err := os.OpenFile(hist, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// A release's completion and a new acquire: two operations more.
	rec := func(i int, typ history.Type, f string) []byte {
		r := history.Record{Index: 7 + i, Process: 0, Seq: 3 + i, Type: typ, F: f, Key: "lock-0", Time: inProgress()[6].Time + int64(i+1)*1e6}
		return append(history.AppendJSON(nil, &r), '\n')
	}
	release, acquire := rec(0, history.OK, history.FRelease), append(rec(1, history.Invoke, history.FAcquire), rec(1, history.OK, history.FAcquire)...)
	steps := []struct {
		name string
		do   func()
		ops  string
	}{
		{"as written", func() {}, "2"},
		{"a record appended", func() { appendBytes(release) }, "3"},
		{"half a line", func() { appendBytes(acquire[:len(acquire)-10]) }, "3"},
		{"the line finished", func() { appendBytes(acquire[len(acquire)-10:]) }, "4"},
		{"what was read overwritten", func() {
			data, err := os.ReadFile(hist)
			if err != nil {
				t.Fatal(err)
			}
			copy(data, bytes.Repeat([]byte("x"), 40))
			if err := os.WriteFile(hist, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "4"},
	}
	for _, st := range steps {
		st.do()
		_, body, _ := get(t, srv, "/_/run/"+s.running)
		if want := `<th>client operations</th><td class="num">` + st.ops + `</td>`; !strings.Contains(body, want) {
			i := strings.Index(body, "<th>client operations</th>")
			t.Errorf("%s: lacks %q: %.80s", st.name, want, body[max(0, i):])
		}
	}
}
