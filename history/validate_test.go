package history

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestValidateStoredRun: a real run's history (60 s, 8 clients, faults)
// passes, its coordinator records and the workers' interleaved as a run
// writes them.
func TestValidateStoredRun(t *testing.T) {
	recs, err := Read(bytes.NewReader(append(bytes.Join(storedRunLines(t), []byte("\n")), '\n')))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(recs); err != nil {
		t.Fatal(err)
	}
}

// TestValidateRefusesDamage: a record a run cannot write, in well-formed
// JSON, is refused with its line and field.
func TestValidateRefusesDamage(t *testing.T) {
	const (
		start = `{"index":0,"process":-1,"type":"run-start","f":"run","time":1000000000,"asked":2000000000}`
		inv   = `{"index":1,"process":0,"seq":1,"type":"invoke","f":"acquire","key":"lock-0","time":1100000000}`
		end   = `{"index":3,"process":-1,"type":"run-end","f":"run","time":3000000000}`
	)
	ok := func(second string) string { return strings.Join([]string{start, inv, second, end}, "\n") + "\n" }
	cases := []struct {
		name, text, want string
	}{
		{"valid", ok(`{"index":2,"process":0,"seq":1,"type":"ok","f":"acquire","key":"lock-0","time":1200000000}`), ""},
		{"huge error", ok(`{"index":2,"process":0,"seq":1,"type":"fail","f":"acquire","key":"lock-0","time":1200000000,"error":"` +
			strings.Repeat("x", MaxString+1) + `"}`), "history line 3: error is 1048577 bytes"},
		{"time past the run", ok(`{"index":2,"process":0,"seq":1,"type":"ok","f":"acquire","key":"lock-0","time":488000000000}`),
			"history line 3: time 488000000000 is 8m5s later than that of line 4"},
		{"negative time", ok(`{"index":2,"process":0,"seq":1,"type":"ok","f":"acquire","key":"lock-0","time":-5}`), "history line 3: time -5"},
		{"unknown type", ok(`{"index":2,"process":0,"seq":1,"type":"won","f":"acquire","key":"lock-0","time":1200000000}`), `history line 3: type "won"`},
		{"index out of place", ok(`{"index":7,"process":0,"seq":1,"type":"ok","f":"acquire","key":"lock-0","time":1200000000}`), "history line 3: index 7, want 2"},
		{"process below the coordinator", ok(`{"index":2,"process":-4,"seq":1,"type":"ok","f":"acquire","key":"lock-0","time":1200000000}`), "history line 3: process -4"},
		{"negative seq", ok(`{"index":2,"process":0,"seq":-1,"type":"ok","f":"acquire","key":"lock-0","time":1200000000}`), "history line 3: seq -1 is negative"},
		{"negative lag", ok(`{"index":2,"process":-1,"type":"run-end","f":"run","time":1200000000,"lag":{"ticks":3,"p99":-1,"max":1}}`), "history line 3: lag.p99 -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := Read(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(recs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused a valid history: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestReadLastLine: a last line without its newline is cut off (the
// records before it, ErrTruncated) only when it is the start of one
// record; a history whose newlines were lost is damaged.
func TestReadLastLine(t *testing.T) {
	const a, b = `{"index":0,"process":0,"type":"invoke","f":"acquire","time":1}`, `{"index":1,"process":0,"type":"ok","f":"acquire","time":2}`
	cases := []struct {
		name, text string
		recs       int
		want       string // "" for ErrTruncated
	}{
		{"cut in a record", a + "\n" + b[:20], 1, ""},
		{"cut in a string", a + "\n" + `{"index":1,"error":"ab`, 1, ""},
		{"newlines replaced by spaces", a + " " + b, 0, "history line 1 holds a whole record and more"},
		{"newlines removed, last cut", a + b + b[:10], 0, "history line 1 holds a whole record and more"},
		{"newlines replaced by text", a + `\n` + b, 0, "history line 1 holds a whole record and more"},
		{"garbage", a + "\n" + `{"index":1,"type":"ok"]`, 1, "history line 2: invalid character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := Read(strings.NewReader(tc.text))
			if len(recs) != tc.recs {
				t.Errorf("%d records, want %d", len(recs), tc.recs)
			}
			switch {
			case tc.want == "" && !errors.Is(err, ErrTruncated):
				t.Fatalf("got %v, want ErrTruncated", err)
			case tc.want != "" && (err == nil || errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
