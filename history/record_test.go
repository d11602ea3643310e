package history

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	full := `{"index":0,"process":1,"seq":1,"type":"invoke","f":"acquire","time":5}
{"index":1,"process":1,"seq":1,"type":"ok","f":"acquire","time":9}
`
	cases := []struct {
		name    string
		text    string
		records int
		err     error
		anyErr  bool
	}{
		{"complete", full, 2, nil, false},
		{"cut mid-line", full + `{"index":2,"proc`, 2, ErrTruncated, false},
		{"cut inside a number", full + `{"index":2,"process":1,"seq":2,"type":"invoke","f":"release","time":1`, 2, ErrTruncated, false},
		{"garbage in the middle", `{"index":0}` + "\nnot json\n" + full, 1, nil, true},
		{"empty", "", 0, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := Read(strings.NewReader(tc.text))
			if len(recs) != tc.records {
				t.Errorf("%d records, want %d", len(recs), tc.records)
			}
			switch {
			case tc.anyErr && (err == nil || errors.Is(err, ErrTruncated)):
				t.Errorf("err %v, want a parse error", err)
			case !tc.anyErr && !errors.Is(err, tc.err):
				t.Errorf("err %v, want %v", err, tc.err)
			}
		})
	}
}

func TestOpsPairsAndOpenOpsAreInfo(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w.Append(Record{Process: 0, Seq: 1, Type: Invoke, F: FAcquire, Time: 1})
	w.Append(Record{Process: 1, Seq: 1, Type: Invoke, F: FAcquire, Time: 2})
	w.Append(Record{Process: 0, Seq: 1, Type: OK, F: FAcquire, Time: 3, Token: 7})
	w.Append(Record{Process: NemesisProcess, Type: FaultStart, F: "fault", Fault: "pause-holder", Target: "c1", Time: 4})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadFile(w.f.Name())
	if err != nil {
		t.Fatal(err)
	}
	ops := Ops(recs)
	if len(ops) != 2 || ops[0].Outcome != OK || ops[0].Token != 7 || ops[0].Return != 3 {
		t.Fatalf("first op %+v", ops[0])
	}
	if ops[1].Outcome != Info || ops[1].Return != Never || ops[1].CompleteIndex != -1 {
		t.Fatalf("an op never completed must be info with no return: %+v", ops[1])
	}
	fs := Faults(recs)
	if len(fs) != 1 || fs[0].Healed || fs[0].Stop != 4 {
		t.Fatalf("unhealed fault %+v", fs)
	}
}

// TestFlushWritesNow: a record is buffered until the timer or Close, but
// Flush puts it in the file at once, for a reader about to look for it.
func TestFlushWritesNow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Append(Record{Process: NemesisProcess, Type: RunStart, F: "run", Time: 1})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadFile(path)
	if err != nil || len(recs) != 1 || recs[0].Type != RunStart {
		t.Fatalf("after Flush the file holds %v (%v), want the run-start record", recs, err)
	}
}
