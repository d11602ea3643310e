package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A slot's default command empties the files it names with --empty-file
// (a Sentinel's config, written by its last start) before anything else,
// and must then name a program; a wrong one is an error, not an exec.
func TestExecDefaultArgs(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	if err := os.WriteFile(conf, []byte("sentinel monitor locktest 10.0.0.2 6379 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		def  []string
		want string
	}{
		{[]string{emptyFileFlag, conf}, "want [--empty-file FILE]… COMMAND ARG…"},
		{[]string{emptyFileFlag, conf, "--port", "26379"}, "want [--empty-file FILE]… COMMAND ARG…"},
		{[]string{emptyFileFlag, conf, "no-such-server-here"}, "executable file not found"},
		{[]string{emptyFileFlag, filepath.Join(conf, "not-a-dir"), "redis-sentinel"}, "not a directory"},
	} {
		err := execDefault(tc.def)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("execDefault(%q) = %v, want an error with %q", tc.def, err, tc.want)
		}
	}
	if data, err := os.ReadFile(conf); err != nil || len(data) != 0 {
		t.Errorf("%s after --empty-file: %q, %v; want it empty", conf, data, err)
	}
}
