package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/locktest/locktest/reports"
)

// asLocktest, set in a test binary's environment, makes that binary
// locktest itself (TestMain): the bash completion test runs the completion
// script against it, as a shell runs it against locktest.
const asLocktest = "LOCKTEST_CLI_TEST_AS_LOCKTEST"

func TestMain(m *testing.M) {
	if os.Getenv(asLocktest) != "" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// main runs Main on args and returns its exit code, stdout and stderr.
func main(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestHelp: every form of help is on stdout with exit 0; help CMD is
// CMD's own help, the same as CMD --help, never the top-level usage; the
// help of a group (suite) gives each of its commands' flags; version names
// the build and the servers.
func TestHelp(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"usage:\n  locktest COMMAND", "version ", "completion ", "help "}},
		{[]string{"--help"}, []string{"Exit codes follow Jepsen"}},
		{[]string{"-h"}, []string{"Exit codes follow Jepsen"}},
		{[]string{"help", "run"}, []string{"usage:\n  locktest run --impl NAME [flags]", "--seed N ", "--progress MODE", "254 bad arguments"}},
		{[]string{"run", "--help"}, []string{"usage:\n  locktest run --impl NAME [flags]"}},
		{[]string{"run", "-help"}, []string{"usage:\n  locktest run --impl NAME [flags]"}},
		{[]string{"help", "suite"}, []string{"locktest suite COMMAND", "check ", "merge ", "flags of locktest suite run:", "--parallel", "--seeds", "flags of locktest suite merge:"}},
		{[]string{"suite", "--help"}, []string{"flags of locktest suite run:", "--shard i/n"}},
		{[]string{"help", "suite", "run"}, []string{"locktest suite run FILE [flags]", "--parallel int"}},
		{[]string{"suite", "merge", "--help"}, []string{"locktest suite merge DIR...", "--out"}},
		{[]string{"help", "version"}, []string{"usage:\n  locktest version", "installed here"}},
		{[]string{"help", "serve"}, []string{"usage:\n  locktest serve [STORE]", "--addr"}},
		{[]string{"help", "explore"}, []string{"--budget DURATION", "(default 5m0s)", "--fault FAULT,..."}},
		{[]string{"envelope", "--help"}, []string{"--vary string", "--duration DURATION", "(default 6s)"}},
		{[]string{"compare", "store", "--help"}, []string{"locktest compare [flags] DIR...", "with --run: runs at once"}},
		{[]string{"analyze", "store/latest", "--help"}, []string{"--check-timeout DURATION", "--no-report"}},
		{[]string{"help", "completion"}, []string{"bash ", "zsh ", "fish ", "powershell "}},
		{[]string{"version"}, []string{"locktest  github.com/locktest/locktest\n", "go        " + runtime.Version(), "server    redis-server "}},
	}
	for _, tc := range cases {
		code, out, errs := main(tc.args...)
		if code != exitValid || errs != "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", tc.args, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		if tc.args[0] == "help" && len(tc.args) > 1 && strings.Contains(out, "Exit codes follow Jepsen") {
			t.Errorf("%v: printed the top-level help, want the command's own", tc.args)
		}
	}
	// The help of a command is one text, however it is asked for; a
	// default is given once.
	for _, same := range [][2][]string{
		{{"help", "run"}, {"run", "--help"}},
		{{"help", "suite", "run"}, {"suite", "run", "--help"}},
		{{"help"}, {"--help"}},
		{{"version"}, {"--version"}},
		{{"version"}, {"-version"}},
	} {
		_, a, _ := main(same[0]...)
		_, b, _ := main(same[1]...)
		if a != b {
			t.Errorf("%v and %v differ:\n%s\n----\n%s", same[0], same[1], a, b)
		}
	}
	if _, out, _ := main("help", "run"); strings.Count(out, "(default 15s)") != 1 {
		t.Errorf("help run gives --duration's default %d times, want once:\n%s", strings.Count(out, "(default 15s)"), out)
	}
	for _, internal := range []string{"worker", "docker-watchdog", "node-exec", "__complete"} {
		if _, out, _ := main("help"); strings.Contains(out, internal) {
			t.Errorf("help lists the internal command %s:\n%s", internal, out)
		}
	}
}

// TestBadArguments: each mistake on the command line is one line on
// stderr saying what is wrong, exit 254, and nothing started. Flags go
// anywhere, after positional arguments too.
func TestBadArguments(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	cases := []struct {
		args []string
		want string // the whole line, or a part of it
	}{
		{[]string{"frobnicate"}, `locktest: unknown command "frobnicate" (valid: analyze, compare, completion, deps, envelope, explore, heal, images, list, run, serve, suite, version); see locktest --help`},
		{[]string{"frobnicate", "--impl", "x"}, "locktest: unknown flag --impl; see locktest --help"},
		{[]string{"help", "bogus"}, `locktest help: unknown command "bogus"`},
		{[]string{"help", "suite", "bogus"}, `locktest help: unknown command "bogus" (valid: check, merge, run); see locktest suite --help`},
		{[]string{"run", "--foo"}, "locktest run: unknown flag --foo; see locktest run --help"},
		{[]string{"run", "--impl", "redis-single", "-x"}, "locktest run: unknown flag -x; see locktest run --help"},
		{[]string{"run"}, "locktest run: --impl is required (locktest list impls)"},
		{[]string{"run", "--impl"}, "locktest run: flag needs an argument: --impl"},
		{[]string{"run", "--impl", "redis-single", "--clients", "many"}, `locktest run: invalid value "many" for --clients: not a whole number; see locktest run --help`},
		{[]string{"run", "--impl", "redis-single", "--duration", "fifteen"}, `invalid value "fifteen" for --duration: not a duration`},
		{[]string{"run", "--impl", "redis-single", "--persist=maybe"}, `invalid value "maybe" for --persist: want true or false`},
		{[]string{"run", "--impl", "redis-single", "--progress", "loud"}, `invalid value "loud" for --progress`},
		{[]string{"run", "stray", "--impl", "redis-single"}, `locktest run: unexpected argument "stray"; see locktest run --help`},
		{[]string{"run", "--impl", "no-such-lock", "--store", missing}, `unknown impl "no-such-lock"`},
		// Go's flag package took single-dash long flags; they still work.
		{[]string{"run", "-impl", "no-such-lock", "-store=" + missing}, `unknown impl "no-such-lock"`},
		{[]string{"run", "--impl", "redis-single", "--clock-rate", "+Inf", "--store", missing}, `invalid value "+Inf" for --clock-rate: not a finite number`},
		{[]string{"run", "--impl", "redis-single", "--clock-rate", "NaN", "--store", missing}, `invalid value "NaN" for --clock-rate: not a finite number`},
		{[]string{"run", "--impl", "redis-single", "--fault", "pause-holder,pause-holder", "--store", missing}, "--fault: pause-holder is given twice"},
		{[]string{"run", "--impl", "redis-single", "--fault", "none,pause-holder", "--store", missing}, "--fault: none cannot be combined"},
		{[]string{"run", "--impl", "redis-single", "--fault", "latency+latency", "--store", missing}, "--fault: latency+latency pairs latency with itself"},
		{[]string{"run", "--impl", "redis-single", "--fault", "none+latency", "--store", missing}, "--fault: none+latency: none injects nothing and cannot be one of a pair"},
		{[]string{"run", "--impl", "redis-single", "--fault", "latency,latency+pause-holder", "--store", missing}, "--fault: latency is given twice"},
		{[]string{"run", "--impl", "redis-single", "--fault", "pause-holder+kill-holder", "--store", missing}, "pause-holder and kill-holder both seize a client process"},
		{[]string{"run", "--impl", "redis-single", "--fault", "latency", "--fault-duration2", "1s", "--store", missing}, "--fault-duration2 is the length of the second fault of a pair"},
		{[]string{"run", "--impl", "redis-single", "--scenario", "latest", "--store", missing}, `--scenario: name "latest": the store uses it`},
		{[]string{"run", "--impl", "redis-single", "--store", ""}, `--store "": give a directory`},
		{[]string{"run", "--impl", "redis-single", "--backend", "ssh", "--store", missing}, "--backend ssh needs --nodes HOST,...: the hosts to run the servers on"},
		{[]string{"run", "--impl", "redis-single", "--ssh-key", "k", "--store", missing}, "--ssh-user, --ssh-key, --ssh-known-hosts and --ssh-dir only apply with --nodes"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a,b:x", "--store", missing}, `--nodes: "b:x": port "x" is not a port`},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a,root@a:22", "--store", missing}, "--nodes: root@a:22 is given twice"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a", "--backend", "docker", "--store", missing}, "--nodes runs the servers on other hosts over SSH: drop --backend docker"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a", "--servers", "127.0.0.1:1", "--store", missing}, "--nodes with --servers pauses your servers on their hosts, by pid: give --server-pids"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a", "--servers", "127.0.0.1:1", "--server-pids", "5", "--store", missing}, "--servers 127.0.0.1:1: 127.0.0.1 is none of the hosts of --nodes (a), where its pid would be"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a", "--ssh-dir", "/tmp/x", "--store", missing}, "--ssh-dir /tmp/x: give an absolute path whose last part names locktest"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a", "--fault", "loss", "--network", "proxy", "--store", missing}, "fault loss needs the kernel's network: with --nodes, --network firewall"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "a", "--network", "netns", "--store", missing}, "--network netns is a lab of namespaces on this machine, which holds no server of --nodes"},
		{[]string{"run", "--impl", "redis-single", "--network", "firewall", "--store", missing}, "--network firewall is the firewalls of the --nodes hosts"},
		{[]string{"run", "--impl", "redis-single", "--nodes", "@" + missing, "--store", missing}, "--nodes @" + missing + ": open"},
		{[]string{"heal", "--dir", missing}, "locktest heal: --dir " + missing + ": no undo list"},
		{[]string{"explore"}, "locktest explore: --impl is required"},
		{[]string{"explore", "--impl", "redis-single", "--budget", "0s"}, "--budget must be positive"},
		{[]string{"envelope", "--impl", "redis-single"}, "locktest envelope: give exactly one --fault to sweep"},
		{[]string{"envelope", "--impl", "redis-single", "--ttl", "long"}, `invalid value "long" for --ttl`},
		{[]string{"analyze"}, "locktest analyze: give exactly one run directory"},
		{[]string{"analyze", missing, "--check-timeout", "soon"}, `locktest analyze: invalid value "soon" for --check-timeout`},
		{[]string{"analyze", missing, "--check-timeout", "5s"}, "no such file or directory"},
		{[]string{"compare"}, "locktest compare: give at least one run or store directory"},
		{[]string{"compare", missing, "--out", missing}, "locktest compare:"},
		{[]string{"compare", missing, "--run", "suites/quick.yaml"}, "--run compares what the campaign runs: give no directories"},
		{[]string{"serve", missing, "--addr", "nowhere"}, "locktest serve:"},
		{[]string{"suite"}, "locktest suite: give a command (check, merge, run); see locktest suite --help"},
		{[]string{"suite", "bogus"}, `locktest suite: unknown command "bogus" (valid: check, merge, run)`},
		{[]string{"suite", "run"}, "locktest suite run: give the suite file, e.g. suites/quick.yaml; see locktest suite run --help"},
		{[]string{"suite", "run", "a.yaml", "b.yaml"}, `locktest suite run: unexpected argument "b.yaml": give one suite file`},
		{[]string{"suite", "run", missing, "--parallel", "0"}, "--parallel must be at least 1"},
		{[]string{"suite", "run", missing, "--parallel", "1"}, "missing"},
		{[]string{"suite", "run", "any.yaml", "--shard", "0/2"}, `--shard: "0/2": want 1 ≤ i ≤ n`},
		{[]string{"suite", "run", "any.yaml", "--shard", "3/2"}, `--shard: "3/2": want 1 ≤ i ≤ n`},
		{[]string{"suite", "run", "any.yaml", "--shard", "abc"}, `--shard: "abc" is not i/n`},
		{[]string{"suite", "check"}, "locktest suite check: give the suite file"},
		{[]string{"suite", "merge"}, "give the output directories of suite run --shard i/n"},
		{[]string{"list", "bogus"}, `locktest list: unknown list "bogus" (valid: impls, workloads, faults)`},
		{[]string{"list", "impls", "faults"}, "locktest list: give at most one of impls, workloads, faults"},
		{[]string{"images"}, "locktest images: give a command (build)"},
		{[]string{"version", "--json"}, "locktest version: unknown flag --json"},
		{[]string{"version", "now"}, `locktest version: takes no arguments (got "now")`},
		{[]string{"--version", "now"}, `locktest: --version takes no arguments (got "now"); see locktest --help`},
		{[]string{"completion", "tcsh"}, `locktest completion: unknown command "tcsh" (valid: bash, fish, powershell, zsh)`},
	}
	for _, tc := range cases {
		code, out, errs := main(tc.args...)
		if code != exitBadArgs {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, code, exitBadArgs, errs)
		}
		if out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: stdout %q, stderr %q; want one line on stderr saying %q", tc.args, out, errs, tc.want)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("bad arguments left %s behind", missing)
	}
	// No command at all: the usage, on stderr.
	if code, out, errs := main(); code != exitBadArgs || out != "" || !strings.Contains(errs, "usage:\n  locktest COMMAND") {
		t.Errorf("no command: exit %d, stdout %q, stderr %q; want 254 and the usage on stderr", code, out, errs)
	}
}

// TestWriteBuild: the version names the revision and its commit time, not
// "(devel)"; a release keeps its version; a build without a VCS stamp says
// so and how to get one.
func TestWriteBuild(t *testing.T) {
	cases := []struct {
		name string
		b    reports.Build
		want string
	}{
		{"checkout", reports.Build{Module: "github.com/locktest/locktest", Version: "(devel)", Revision: "01019b6a", Time: "2026-11-28T05:23:04Z", Go: "go1.26.8"},
			"locktest  github.com/locktest/locktest\nrevision  01019b6a\ntime      2026-11-28T05:23:04Z\ngo        go1.26.8\n"},
		{"modified", reports.Build{Module: "m", Version: "(devel)", Revision: "01019b6a", Time: "2026-11-28T05:23:04Z", Modified: true, Go: "go1.26.8"},
			"locktest  m\nrevision  01019b6a (modified: the checkout had uncommitted changes)\ntime      2026-11-28T05:23:04Z\ngo        go1.26.8\n"},
		{"release", reports.Build{Module: "m", Version: "v1.2.0", Go: "go1.26.8"},
			"locktest  m v1.2.0\nrevision  unknown: built without VCS information (build inside a git clone, without -buildvcs=false)\ngo        go1.26.8\n"},
	}
	for _, tc := range cases {
		var b strings.Builder
		writeBuild(&b, tc.b)
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// TestRenamedHelp: the command tree of a binary with another name gives
// that name in its usage lines and in the commands its help suggests.
func TestRenamedHelp(t *testing.T) {
	var out strings.Builder
	root := newRoot("mylock", &out, &out)
	root.SetArgs([]string{"run", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"usage:\n  mylock run --impl NAME", "(mylock list impls)", "(mylock images build)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mylock run --help lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "locktest list") {
		t.Errorf("mylock run --help still suggests locktest:\n%s", out.String())
	}
}

// TestDeps: with a PATH that hides the servers, deps names each design's
// missing programs and their packages, and the install command it would
// run (with apt-get) or what to install (without); it installs nothing
// here.
func TestDeps(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	code, out, errs := main("deps", "redis-replicated", "redis-single")
	if code != exitInvalid || errs != "" {
		t.Errorf("deps without apt-get: exit %d, stderr %q; want 1 and nothing", code, errs)
	}
	for _, want := range []string{
		"no apt-get here: install redis-sentinel redis-server (Debian package names) with your package manager",
		"redis-replicated             missing redis-sentinel (apt-get install redis-sentinel); redis-server (apt-get install redis-server)",
		"redis-single                 missing redis-server (apt-get install redis-server)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("deps output lacks %q:\n%s", want, out)
		}
	}
	for _, b := range []string{"apt-get", "redis-server"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ = main("deps", "--dry-run", "redis-replicated", "redis-single")
	if code != exitInvalid || !strings.Contains(out, "apt-get install -y -qq --no-install-recommends redis-sentinel\n") ||
		!strings.Contains(out, "redis-single                 ready") {
		t.Errorf("deps --dry-run with apt-get and redis-server: exit %d, want 1, the install of redis-sentinel alone, redis-single ready:\n%s", code, out)
	}
	if code, out, _ := main("list", "impls"); code != exitValid || !strings.Contains(out, "redis-replicated") ||
		!strings.Contains(out, "; missing redis-sentinel (apt-get install redis-sentinel)") {
		t.Errorf("list impls: exit %d, want 0 and redis-replicated missing redis-sentinel:\n%s", code, out)
	}
	if code, _, errs := main("deps", "no-such-design"); code != exitBadArgs || !strings.Contains(errs, `locktest deps: unknown impl "no-such-design"`) {
		t.Errorf("deps no-such-design: exit %d, stderr %q; want 254 naming it", code, errs)
	}
}
