package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletion: the values of flags whose set is known complete from the
// registries (a list after its commas), suite files and directories from
// the file system, and the hidden commands never.
func TestCompletion(t *testing.T) {
	cases := []struct {
		args      []string // after __complete; the last is the word being completed
		want      []string // completions, descriptions aside
		not       []string
		directive string
	}{
		{[]string{"run", "--impl", "redis-s"}, []string{"redis-single", "redis-single-fenced"}, []string{"etcd", "redlock"}, ":4"},
		{[]string{"explore", "--impl", "etc"}, []string{"etcd", "etcd-fenced"}, []string{"redis-single"}, ":4"},
		{[]string{"run", "--exec-servers", "no"}, []string{"none"}, nil, ":4"},
		{[]string{"run", "--fault", "pause-h"}, []string{"pause-holder"}, []string{"latency"}, ":6"},
		{[]string{"run", "--fault", "pause-holder,lat"}, []string{"pause-holder,latency"}, []string{"latency"}, ":6"},
		{[]string{"run", "--fault", "pause-holder,pause-"}, []string{"pause-holder,pause-node"}, []string{"pause-holder,pause-holder"}, ":6"},
		{[]string{"envelope", "--fault", ""}, []string{"pause-holder", "latency"}, nil, ":6"},
		{[]string{"run", "--workload", ""}, []string{"counter", "mutex"}, nil, ":4"},
		{[]string{"run", "--backend", ""}, []string{"local", "docker"}, nil, ":4"},
		{[]string{"suite", "run", "x.yaml", "--backend", "d"}, []string{"docker"}, []string{"local"}, ":4"},
		{[]string{"run", "--fault-moment", "n"}, []string{"near-expiry"}, []string{"grant"}, ":4"},
		{[]string{"run", "--progress", ""}, []string{"auto", "tty", "plain", "none"}, nil, ":4"},
		{[]string{"run", "--stop-on-violation", "mutex,"}, []string{"mutex,resource"}, nil, ":6"},
		{[]string{"envelope", "--vary", "p"}, []string{"pause"}, nil, ":4"},
		{[]string{"suite", "run", ""}, []string{"yaml", "yml"}, nil, ":8"},
		{[]string{"suite", "check", ""}, []string{"yaml", "yml"}, nil, ":8"},
		{[]string{"compare", "--run", ""}, []string{"yaml"}, nil, ":8"},
		{[]string{"analyze", ""}, nil, nil, ":16"},
		{[]string{"list", ""}, []string{"impls", "workloads", "faults"}, nil, ":4"},
		{[]string{""}, []string{"run", "suite", "completion", "help"}, []string{"worker", "docker-watchdog", "node-exec"}, ":4"},
		{[]string{"help", "su"}, []string{"suite"}, []string{"run"}, ":4"},
		{[]string{"suite", ""}, []string{"run", "check", "merge"}, nil, ":4"},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}, nil, ":4"},
	}
	for _, tc := range cases {
		code, out, _ := main(append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		directive := lines[len(lines)-1]
		var got []string
		for _, l := range lines[:len(lines)-1] {
			name, _, _ := strings.Cut(l, "\t")
			got = append(got, name)
		}
		if code != exitValid || directive != tc.directive {
			t.Errorf("%v: exit %d, directive %s; want 0 and %s", tc.args, code, directive, tc.directive)
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%v: %q not among %q", tc.args, w, got)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("%v: %q offered, want it not: %q", tc.args, n, got)
			}
		}
	}
}

// TestBashCompletion runs the script `locktest completion bash` prints in
// bash, with the bash-completion package it builds on, as a shell runs it
// on Tab: the test binary stands in for locktest (TestMain).
func TestBashCompletion(t *testing.T) {
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if testing.Short() {
		t.Skip("runs bash with the bash-completion package; run without -short")
	}
	// scripts/install-deps installs both: a missing one is a broken setup,
	// not a reason to pass.
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("no bash")
	}
	if _, err := os.Stat(bashCompletion); err != nil {
		t.Fatalf("no bash-completion package (%s): run scripts/install-deps, or apt-get install bash-completion", bashCompletion)
	}
	code, script, errs := main("completion", "bash")
	if code != exitValid || !strings.Contains(script, "__start_locktest") {
		t.Fatalf("completion bash: exit %d, stderr %q", code, errs)
	}
	path := filepath.Join(t.TempDir(), "locktest.bash")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// compopt only works inside a completion the shell started: outside
	// one it complains, and the no-space it sets is not under test here.
	const complete = `source "$1"; source "$2"; shift 2
compopt() { :; }
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
__start_locktest
printf '%s\n' "${COMPREPLY[@]}"`
	cases := []struct {
		words []string // after locktest, the last being completed
		want  []string // COMPREPLY, in order
	}{
		{[]string{"su"}, []string{"suite"}},
		{[]string{"run", "--impl", "redis-single-f"}, []string{"redis-single-fenced"}},
		{[]string{"run", "--impl", "etcd-f"}, []string{"etcd-fenced"}},
		{[]string{"run", "--fault", "pause-holder,lat"}, []string{`pause-holder\,latency`}},
		{[]string{"run", "--fault-moment", "near"}, []string{"near-expiry"}},
		{[]string{"explore", "--progress", "p"}, nil}, // explore has no --progress
		{[]string{"run", "--progress", "p"}, []string{"plain"}},
		{[]string{"wor"}, nil},
		{[]string{"suite", "run", "suites/qu"}, []string{"suites/quick.yaml"}},
	}
	for _, tc := range cases {
		cmd := exec.Command("bash", append([]string{"-c", complete, "bash", bashCompletion, path, self}, tc.words...)...)
		cmd.Dir = ".." // where suites/ is
		cmd.Env = append(os.Environ(), asLocktest+"=1")
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%v: %v", tc.words, err)
			continue
		}
		got := strings.Fields(string(out))
		if !slices.Equal(got, tc.want) {
			t.Errorf("locktest %s<Tab>: %q, want %q", strings.Join(tc.words, " "), got, tc.want)
		}
	}
}
