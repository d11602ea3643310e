package cli

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestHelpAndVersion: help CMD shows CMD's own help, suite's help lists
// its commands and run's flags, version names the build and the servers,
// and a wrong word is one line and exit 254.
func TestHelpAndVersion(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want []string // in stdout, or in stderr when code is not 0
	}{
		{[]string{"help"}, exitValid, []string{"locktest version", "locktest help [COMMAND]"}},
		{[]string{"help", "run"}, exitValid, []string{"usage: locktest run --impl NAME", "-seed"}},
		{[]string{"help", "suite"}, exitValid, []string{"locktest suite check <file>", "flags of suite run", "-parallel", "-seeds"}},
		{[]string{"suite", "--help"}, exitValid, []string{"locktest suite run <file>", "flags of suite run", "-out"}},
		{[]string{"help", "suite", "run"}, exitValid, []string{"flags of suite run"}},
		{[]string{"suite", "merge", "--help"}, exitValid, []string{"locktest suite merge <dir>...", "-out"}},
		{[]string{"suite", "merge"}, exitBadArgs, []string{"give the output directories of suite run --shard i/n"}},
		{[]string{"suite", "run", "any.yaml", "--shard", "0/2"}, exitBadArgs, []string{`--shard: "0/2": want 1 ≤ i ≤ n`}},
		{[]string{"suite", "run", "any.yaml", "--shard", "3/2"}, exitBadArgs, []string{`--shard: "3/2": want 1 ≤ i ≤ n`}},
		{[]string{"suite", "run", "any.yaml", "--shard", "abc"}, exitBadArgs, []string{`--shard: "abc" is not i/n`}},
		{[]string{"help", "version"}, exitValid, []string{"usage: locktest version"}},
		{[]string{"help", "serve"}, exitValid, []string{"usage: locktest serve [STORE]", "-addr"}},
		{[]string{"help", "run"}, exitValid, []string{"--progress MODE"}},
		{[]string{"version"}, exitValid, []string{"locktest  github.com/locktest/locktest ", "go        " + runtime.Version(), "server    redis-server "}},
		{[]string{"help", "bogus"}, exitBadArgs, []string{`unknown command "bogus"`}},
		{[]string{"version", "--json"}, exitBadArgs, []string{"takes no arguments"}},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := Main(tc.args, &stdout, &stderr)
		out := stdout.String()
		if tc.code != exitValid {
			out = stderr.String()
			if strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Errorf("%v: %d lines on stderr, want one:\n%s", tc.args, strings.Count(out, "\n"), out)
			}
		}
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		if tc.args[0] == "help" && len(tc.args) > 1 && tc.code == exitValid && strings.Contains(out, "Jepsen-style tests") {
			t.Errorf("%v: printed the top-level usage, want the command's own help", tc.args)
		}
	}
}
