package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/runner"
)

// durationFlag lets flag parse into a runner.Duration.
type durationFlag struct{ d *runner.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return time.Duration(*f.d).String()
}

func (f durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (try 15s, 500ms, 2m)")
	}
	*f.d = runner.Duration(v)
	return nil
}

// listFlag parses a comma-separated list.
type listFlag struct{ l *[]string }

func (f listFlag) String() string {
	if f.l == nil {
		return ""
	}
	return strings.Join(*f.l, ",")
}

func (f listFlag) Set(s string) error {
	*f.l = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*f.l = append(*f.l, p)
		}
	}
	return nil
}

// runFlags binds the flags of `run` to a Config.
func runFlags(cfg *runner.Config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("locktest run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Impl, "impl", cfg.Impl, "lock design to test (locktest list impls)")
	fs.StringVar(&cfg.Workload, "workload", cfg.Workload, "what each client does (locktest list workloads)")
	fs.Var(listFlag{&cfg.Faults}, "fault", "faults to inject, comma-separated (locktest list faults)")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "number of client processes")
	fs.IntVar(&cfg.Keys, "keys", cfg.Keys, "number of lock keys")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the fault schedule and client choices")
	fs.StringVar(&cfg.Store, "store", cfg.Store, "directory runs are stored in")
	fs.StringVar(&cfg.Scenario, "scenario", cfg.Scenario, "name of the run in the store (default impl_workload_faults)")
	fs.StringVar(&cfg.FaultTarget, "fault-target", cfg.FaultTarget,
		"what the faults aim at: one target (holder, client, c3, node, minority, majority, all, primary, leader, link:c0:redis-0, node/peers …)\nor fault=target pairs; default: each fault's own (locktest list faults)")
	fs.Float64Var(&cfg.ClockRate, "clock-rate", cfg.ClockRate, "how fast client-clock-skew makes a client's clock run (1: true speed)")
	fs.BoolVar(&cfg.Persist, "persist", cfg.Persist, "servers persist every write before acknowledging (Redis: AOF, appendfsync always), so kill-node restarts them with their data")
	fs.StringVar(&cfg.ExecCmd, "exec-cmd", cfg.ExecCmd, "with --impl exec: your lock client's command line, run once per worker (docs/protocol.md)")
	fs.StringVar(&cfg.Backend, "backend", cfg.Backend, "what runs the servers: local processes, or docker containers (images from `locktest images build`)")
	fs.StringVar(&cfg.ExecServers, "exec-servers", cfg.ExecServers, "with --impl exec: the design whose servers to start (e.g. redis-single), or none")
	for _, d := range []struct {
		name string
		v    *runner.Duration
		help string
	}{
		{"duration", &cfg.Duration, "how long clients run before the final heal"},
		{"ttl", &cfg.TTL, "lease TTL of the lock"},
		{"acquire-timeout", &cfg.AcquireTimeout, "deadline of one acquire call"},
		{"io-timeout", &cfg.IOTimeout, "timeout of each request to a server"},
		{"retry-min", &cfg.RetryMin, "minimum sleep between acquire tries"},
		{"retry-jitter", &cfg.RetryJitter, "random extra sleep between tries, in [0, jitter)"},
		{"hold-min", &cfg.HoldMin, "minimum time a client holds the lock (in counter: between read and write)"},
		{"hold-max", &cfg.HoldMax, "maximum hold time"},
		{"fault-interval", &cfg.FaultInterval, "mean quiet time between faults"},
		{"fault-duration", &cfg.FaultDuration, "how long each fault lasts (0: 2×TTL)"},
		{"latency", &cfg.Latency, "delay the latency fault adds to each request"},
		{"jitter", &cfg.Jitter, "random ± variation of the latency fault's delay"},
		{"clock-delta", &cfg.ClockDelta, "how far clock faults move a clock, negative for back (0: +2×TTL)"},
		{"check-timeout", &cfg.CheckTimeout, "time limit of each porcupine check (then the verdict is unknown)"},
	} {
		fs.Var(durationFlag{d.v}, d.name, d.help)
	}
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: locktest run --impl NAME [flags]\n\nRuns one scenario on real servers and client processes, checks it and exits\n0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 internal error.\n\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := runner.Defaults()
	fs := runFlags(&cfg, stderr)
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locktest run: unexpected argument %q; see locktest run --help\n", fs.Arg(0))
		return exitBadArgs
	}
	if cfg.Impl == "" {
		fmt.Fprintln(stderr, "locktest run: --impl is required (locktest list impls)")
		return exitBadArgs
	}
	resolved, err := runner.Resolve(cfg)
	if err != nil {
		return exitCode(err, stderr)
	}
	for _, w := range runner.Warnings(resolved) {
		fmt.Fprintln(stderr, "locktest run: warning:", w)
	}
	res, err := runner.Run(ctx, resolved)
	if err != nil {
		if res.Dir != "" {
			fmt.Fprintf(stderr, "locktest: run directory %s (locktest analyze %s)\n", res.Dir, res.Dir)
		}
		return exitCode(err, stderr)
	}
	reports.Summary(stdout, res)
	return verdictCode(res.Verdict)
}

// parse parses flags, keeping a bad flag to one line (flag would print the
// whole usage after it) and printing the usage on stdout for --help.
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return exitValid, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v; see %s --help\n", fs.Name(), err, fs.Name())
		return exitBadArgs, false
	}
	return 0, true
}

func verdictCode(v checker.Verdict) int {
	switch v {
	case checker.Valid:
		return exitValid
	case checker.Invalid:
		return exitInvalid
	default:
		return exitUnknown
	}
}

func cmdAnalyze(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("locktest analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := runner.Duration(0)
	fs.Var(durationFlag{&timeout}, "check-timeout", "time limit of each porcupine check (default: the run's)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: locktest analyze [flags] <run dir>\n\nRe-checks a stored history (a truncated one too) and rewrites the report.\nNo server is started.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "locktest analyze: give exactly one run directory, e.g. store/latest")
		return exitBadArgs
	}
	dir, err := filepath.EvalSymlinks(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "locktest analyze: %v\n", err)
		return exitBadArgs
	}
	cfg, err := runner.LoadConfig(dir)
	if err != nil {
		fmt.Fprintf(stderr, "locktest analyze: %v\n", err)
		return exitBadArgs
	}
	if timeout > 0 {
		cfg.CheckTimeout = timeout
	}
	resolved, err := runner.Resolve(cfg)
	if err != nil {
		return exitCode(err, stderr)
	}
	res, err := runner.Analyze(dir, resolved)
	if err != nil {
		return exitCode(err, stderr)
	}
	reports.Summary(stdout, res)
	return verdictCode(res.Verdict)
}
