package history

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"
)

// sameAsMarshal fails unless AppendJSON writes r as json.Marshal does.
func sameAsMarshal(t *testing.T, r Record) {
	t.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendJSON(nil, &r); string(got) != string(want) {
		t.Fatalf("AppendJSON wrote\n%s\nencoding/json\n%s", got, want)
	}
}

func TestAppendJSONMatches(t *testing.T) {
	for _, r := range []Record{
		{},
		{Index: 3, Process: 2, Seq: 7, Type: Invoke, F: FAcquire, Key: "lock-0", Time: 2576714167207},
		{Index: -1, Process: NemesisProcess, Seq: 1, Type: OK, F: FRead, Key: "lock-0", Value: Int64(1148), Time: 1},
		{Process: 3, Seq: 2, Type: Fail, F: FIncr, Key: "k", Value: Int64(-3), Token: 7, Time: -5, Cmds: 4, Error: "stale token rejected"},
		{Type: FaultStart, F: "fault", Fault: "pause-holder", Target: "c3", Moment: "grant", Asked: 4e9, Time: 5},
		{Process: 2, Seq: 4, Type: OK, F: FAcquire, Key: "k", Token: 3, Validity: -2e6, Time: 8},
		{Type: FaultStart, F: "fault", Fault: "pause-acquire", Target: "c1", Point: "granted", Aim: AimWaiter, Time: 6},
		{Type: RunEnd, F: "run", Lag: &Lag{Ticks: 3, P99: 4, Max: 5}, Stopped: []string{"mutex"}, Time: 9},
		{Type: RunEnd, F: "run", Stopped: []string{}, Time: 9},
		{Type: Info, Error: `a "quoted" <word> & a \ backslash`},
		{Type: Info, Error: "tab\there, newline\n, bell\a, del\x7f"},
		{Type: Info, Error: "café, line\u2028separator, bad \xff utf-8"},
		{Type: ClientFailed, Key: "~!@#$%^*()_+-={}[]|:;',.?/`"},
	} {
		sameAsMarshal(t, r)
	}
}

// TestAppendJSONEveryField: a field added to Record and not to
// AppendJSON fails here, whatever its type (each is set non-zero).
func TestAppendJSONEveryField(t *testing.T) {
	rt := reflect.TypeFor[Record]()
	for i := range rt.NumField() {
		var r Record
		f := reflect.ValueOf(&r).Elem().Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(42)
		case reflect.String:
			f.SetString("x")
		case reflect.Pointer, reflect.Slice:
			f.Set(reflect.New(f.Type()).Elem())
			if f.Kind() == reflect.Pointer {
				f.Set(reflect.New(f.Type().Elem()))
			} else {
				f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			}
		default:
			t.Fatalf("field %s: kind %s not covered by this test", rt.Field(i).Name, f.Kind())
		}
		sameAsMarshal(t, r)
	}
}

func TestAppendJSONMatchesOnStoredRun(t *testing.T) {
	for _, line := range storedRunLines(t) {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		sameAsMarshal(t, r)
	}
}

// storedRunLines are the lines of a real run's history kept as test data:
// what the encoder and decoder must treat exactly as encoding/json does.
func storedRunLines(t *testing.T) [][]byte {
	t.Helper()
	f, err := os.Open("../reports/testdata/run-60s-8c/history.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		lines = append(lines, slices.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil || len(lines) == 0 {
		t.Fatalf("read %d lines: %v", len(lines), err)
	}
	return lines
}

func FuzzAppendJSON(f *testing.F) {
	f.Add(1, 2, "invoke", "acquire", "lock-1", int64(3), "", "")
	f.Add(-1, 0, "ok", "read", "", int64(-7), "a \"b\" <c>", "\xff\u2028")
	f.Fuzz(func(t *testing.T, index, seq int, typ, fn, key string, n int64, errStr, fault string) {
		sameAsMarshal(t, Record{Index: index, Seq: seq, Type: Type(typ), F: fn, Key: key, Value: &n, Token: n,
			Validity: -n, Time: n, Cmds: seq, Error: errStr, Fault: fault, Target: key, Moment: fn, Point: errStr, Asked: -n})
	})
}
