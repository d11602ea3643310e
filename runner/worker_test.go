package runner

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

// A worker's lines are what encoding/json writes and reads, whichever way
// they are written and read.
func TestMessagesMatchJSON(t *testing.T) {
	rec := history.Record{Seq: 4, Type: history.OK, F: history.FAcquire, Key: "lock-3", Token: 9, Time: 12345, Cmds: 2}
	odd := history.Record{Seq: 5, Type: history.Info, F: history.FRelease, Key: "lock-3", Time: 1, Error: `i/o timeout <"x">`, Value: history.Int64(-2)}
	for _, m := range []message{
		{Record: &rec},
		{Record: &rec, InCS: true},
		{Record: &odd},
		{Record: &history.Record{}},
		{InCS: true},
		{Paused: "acquire-granted"},
		{Clock: &clockAck{Offset: time.Second, Rate: 1.5, Skew: -3}},
		{Record: &rec, Paused: "x"},
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got := appendMessage(nil, &m)
		if string(got) != string(want) {
			t.Errorf("appendMessage wrote %s, encoding/json %s", got, want)
		}
		var dec messageDecoder
		var gm, wm message
		if err := dec.decode(got, &gm); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal(got, &wm); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gm, wm) {
			t.Errorf("%s: decoded %+v, encoding/json %+v", got, gm, wm)
		}
	}
	var dec messageDecoder
	var m message
	for _, bad := range []string{`{"r":{"time":1}`, `{"r":{"time":1},"cs":tru}`, `not json`, `{"r":{"time":1}}}`} {
		if err := dec.decode([]byte(bad), &m); err == nil {
			t.Errorf("%s: decoded %+v, want an error", bad, m)
		}
	}
}

// writes records each write a sink makes.
type writes struct {
	mu    sync.Mutex
	lines [][]string
}

func (w *writes) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	return len(b), nil
}

func (w *writes) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.lines)
}

// cycle sends what a mutex cycle sends: invoke, ok and the grant, invoke,
// ok.
func cycle(s *lineSink, seq int) {
	s.Record(history.Record{Seq: seq, Type: history.Invoke, F: history.FAcquire, Key: "k", Time: 1})
	s.Record(history.Record{Seq: seq, Type: history.OK, F: history.FAcquire, Key: "k", Time: 2})
	s.InCriticalSection()
	s.Record(history.Record{Seq: seq + 1, Type: history.Invoke, F: history.FRelease, Key: "k", Time: 3})
	s.Record(history.Record{Seq: seq + 1, Type: history.OK, F: history.FRelease, Key: "k", Time: 4})
}

// A sink writes each invoke and grant at once, with what is queued before
// it; a batch sink holds them with the completions, up to flushDelay.
func TestLineSinkBatches(t *testing.T) {
	var w writes
	s := newLineSink(&w, false)
	cycle(s, 1)
	if got := w.count(); got != 3 {
		t.Errorf("a cycle made %d writes, want 3 (invoke; ok with the grant; invoke): %q", got, w.lines)
	}
	s.close()

	var b writes
	s = newLineSink(&b, true)
	cycle(s, 1)
	cycle(s, 3)
	if got := b.count(); got != 0 {
		t.Errorf("a batch sink wrote at once: %q", b.lines)
	}
	deadline := time.Now().Add(time.Second)
	for b.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if b.count() != 1 || len(b.lines[0]) != 8 || !strings.HasSuffix(b.lines[0][1], `,"cs":true}`) {
		t.Fatalf("batch sink: %q, want one write of the two cycles' 8 lines, the grant on the acquire's ok", b.lines)
	}
	s.Record(history.Record{Type: history.ClientFailed, Time: 5, Error: "broke"})
	if b.count() != 2 {
		t.Errorf("a broken client's record waits in a batch sink: %q", b.lines)
	}
	s.close()
}

// A worker gets sysmonSetting unless GODEBUG sets a schedtrace, and gives
// its lock client's programs the coordinator's GODEBUG back.
func TestWorkerEnv(t *testing.T) {
	for _, tc := range []struct{ coordinator, worker string }{
		{"", "GODEBUG=" + sysmonSetting},
		{"gctrace=1", "GODEBUG=gctrace=1," + sysmonSetting},
		{"gctrace=1,schedtrace=1000", ""},
		{"schedtrace=5", ""},
	} {
		t.Setenv("GODEBUG", tc.coordinator)
		env := workerEnv()
		if got := strings.Join(env, " "); got != tc.worker {
			t.Errorf("GODEBUG=%q: worker env %q, want %q", tc.coordinator, got, tc.worker)
		}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		dropSysmonSetting()
		if got, set := os.LookupEnv("GODEBUG"); got != tc.coordinator || !set && tc.coordinator != "" {
			t.Errorf("GODEBUG=%q: the lock client's programs get %q", tc.coordinator, got)
		}
	}
}
