package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCappedLog: a log keeps its first bytes up to the limit, notes how
// many it dropped, and a reopened log (a restarted client) goes on
// counting under the same cap with one note at its end.
func TestCappedLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c0.log")
	write := func(chunks ...string) {
		l, err := OpenCappedLog(path, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			if n, err := l.Write([]byte(c)); n != len(c) || err != nil {
				t.Fatalf("Write(%q) = %d, %v: a log must take everything", c, n, err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		chunks  []string
		want    string
		dropped int64
	}{
		{[]string{"0123", "45"}, "012345", 0},
		{[]string{"6789ab", "cd"}, "0123456789\n[truncated: 4 bytes dropped]\n", 4},
		{[]string{"efg"}, "0123456789\n[truncated: 7 bytes dropped]\n", 7},
	}
	for _, tc := range cases {
		write(tc.chunks...)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Fatalf("after %q: log %q, want %q", tc.chunks, got, tc.want)
		}
		if n, err := TruncatedBytes(path); n != tc.dropped || err != nil {
			t.Fatalf("after %q: TruncatedBytes = %d, %v; want %d", tc.chunks, n, err, tc.dropped)
		}
	}
	if strings.Count(string(must(os.ReadFile(path))), "truncated") != 1 {
		t.Fatal("a reopened log must keep one note")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
