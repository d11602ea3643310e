package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/workloads"
)

// Duration is a time.Duration that reads and writes as "1.5s", in JSON
// and on the command line.
type Duration time.Duration

// String writes the duration as the command line takes it ("1.5s").
func (d Duration) String() string { return time.Duration(d).String() }

// Set reads a duration from the command line, so that *Duration is a
// flag.Value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (try 15s, 500ms, 2m)")
	}
	*d = Duration(v)
	return nil
}

// Type names the value in a command's help (--budget DURATION), so that
// *Duration is a pflag.Value too.
func (d *Duration) Type() string { return "DURATION" }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Config is one scenario. The same Config and Seed give the same fault
// schedule and the same client choices. Every field is a Setting: add a
// field to Settings too, and it is a flag, a suite field and part of
// Command.
type Config struct {
	Impl     string   `json:"impl"`
	Workload string   `json:"workload"`
	Faults   []string `json:"faults"`
	Clients  int      `json:"clients"`
	Keys     int      `json:"keys"`
	Seed     int64    `json:"seed"`
	Duration Duration `json:"duration"`
	TTL      Duration `json:"ttl"`
	// AcquireTimeout is the deadline of one acquire call.
	AcquireTimeout Duration `json:"acquire_timeout"`
	IOTimeout      Duration `json:"io_timeout"`
	RetryMin       Duration `json:"retry_min"`
	RetryJitter    Duration `json:"retry_jitter"`
	HoldMin        Duration `json:"hold_min"`
	HoldMax        Duration `json:"hold_max"`
	FaultInterval  Duration `json:"fault_interval"`
	// FaultDuration is how long each fault lasts; 0 means 2×TTL, long
	// enough to outlive a lease.
	FaultDuration Duration `json:"fault_duration"`
	// FaultTarget aims the faults: one target for all ("majority"), or
	// per fault ("latency=primary,pause-node=minority"); empty: each
	// fault's default.
	FaultTarget string `json:"fault_target,omitempty"`
	// FaultMoment aligns each strike to a lock moment (faults.Moments):
	// "grant" strikes just after a client entered its critical section.
	// Empty or "any": the wall-clock schedule alone.
	FaultMoment string `json:"fault_moment,omitempty"`
	// Latency ± Jitter is what the latency fault adds to a round trip.
	Latency Duration `json:"latency"`
	Jitter  Duration `json:"jitter"`
	// ClockDelta is how far clock faults move a clock; 0 means +2×TTL.
	ClockDelta Duration `json:"clock_delta"`
	// ClockRate is how fast client-clock-skew makes a client clock run.
	ClockRate float64 `json:"clock_rate"`
	// Persist: servers persist every write before acknowledging it, so a
	// killed server restarts with its data.
	Persist      bool     `json:"persist,omitempty"`
	CheckTimeout Duration `json:"check_timeout"`
	Store        string   `json:"-"`
	// Scenario names the run in the store; default impl_workload_faults.
	Scenario string `json:"scenario"`
	// ExecCmd is the user's lock program for --impl exec, and ExecServers
	// the registered design whose servers it talks to (or "none").
	ExecCmd     string `json:"exec_cmd,omitempty"`
	ExecServers string `json:"exec_servers,omitempty"`
	// Servers are lock servers the user runs (host:port), the design's
	// nodes in its order, which the run uses instead of starting its own
	// (impls.OnServers): a lock whose servers locktest cannot start still
	// meets link faults. ServerPids are their processes, in the same
	// order, for the faults that pause servers.
	Servers    []string `json:"servers,omitempty"`
	ServerPids []string `json:"server_pids,omitempty"`
	// Backend runs the servers: "local" processes (the default) or
	// "docker" containers (cluster.RegisterBackend).
	Backend string `json:"backend,omitempty"`
	// KeepData keeps the servers' data of a valid run too; by default
	// only a run that is not valid keeps it, for a post-mortem (an etcd
	// run's is 184 MB).
	KeepData bool `json:"keep_data,omitempty"`
	// StopOnViolation names checks (mutex, resource) that end the run as
	// soon as each of them finds a violation in the history so far: the
	// verdict cannot change, and an expected anomaly costs less time.
	StopOnViolation []string `json:"stop_on_violation,omitempty"`
}

// Defaults returns the configuration the CLI and suites start from: the
// settings' defaults.
func Defaults() Config {
	s := time.Second
	ms := time.Millisecond
	return Config{
		Workload: "counter", Faults: []string{"none"}, Clients: 5, Keys: 1, Seed: 1,
		Duration: Duration(15 * s), TTL: Duration(s), AcquireTimeout: Duration(5 * s), IOTimeout: Duration(500 * ms),
		RetryMin: Duration(20 * ms), RetryJitter: Duration(30 * ms), HoldMin: Duration(20 * ms), HoldMax: Duration(60 * ms),
		FaultInterval: Duration(3 * s), CheckTimeout: Duration(60 * s), Store: "store",
		Latency: Duration(100 * ms), Jitter: Duration(50 * ms), ClockRate: 1,
	}
}

// lockConfig is the part of every lock client's configuration the run's
// settings give; the run adds each client's own (Client, Nodes) and where
// an exec program runs.
func (cfg Config) lockConfig() lock.Config {
	return lock.Config{
		TTL: time.Duration(cfg.TTL), AcquireTimeout: time.Duration(cfg.AcquireTimeout),
		IOTimeout: time.Duration(cfg.IOTimeout), RetryMin: time.Duration(cfg.RetryMin),
		RetryJitter: time.Duration(cfg.RetryJitter), Seed: cfg.Seed, Persist: cfg.Persist, ExecCmd: cfg.ExecCmd,
	}
}

// Limits of a run. MaxClients is what a 2-core machine runs as meant:
// at 64 clients a 3 s etcd run takes 7 s and most acquires still get an
// answer; at 256 it took 23 s, and 477 of 693 acquires timed out
// while the clients started. Every key gets a final read and a
// porcupine partition, so keys are bounded too.
const (
	MaxClients = 64
	MaxKeys    = 1000
)

// BadConfigError is a problem with the user's input: exit 254, nothing
// started.
type BadConfigError struct{ Err error }

func (e *BadConfigError) Error() string { return e.Err.Error() }
func (e *BadConfigError) Unwrap() error { return e.Err }

func bad(format string, args ...any) error {
	return &BadConfigError{fmt.Errorf(format, args...)}
}

// Resolved is a Config whose names were looked up.
type Resolved struct {
	Config
	Design   impls.Design
	Workload workloads.Workload
	Faults   []faults.Fault
	// Targets holds each fault's target, in Faults order.
	Targets []faults.Target
	// Reproduce, when set, is the command line that runs the scenario
	// again, in place of Command: a test that calls locktesting.Run is
	// reproduced by go test, not by a locktest command.
	Reproduce string
}

// reproduce is the command that runs the scenario again.
func (r Resolved) reproduce() string {
	if r.Reproduce != "" {
		return r.Reproduce
	}
	return r.Command()
}

// LookupDesign returns the design cfg names: a registered one, or the
// exec design around the user's program; with --servers, on the user's
// servers (impls.OnServers), so that every caller (a run, a search's
// choice of targets, a sweep) sees the nodes the run will have.
func (cfg Config) LookupDesign() (impls.Design, error) {
	d, err := cfg.lookupDesign()
	if err != nil || (len(cfg.Servers) == 0 && len(cfg.ServerPids) == 0) {
		return d, err
	}
	if len(cfg.Servers) == 0 {
		return d, errors.New("--server-pids needs --servers: the addresses of the servers whose pids they are")
	}
	servers, err := cluster.ParseUserServers(cfg.Servers, cfg.ServerPids)
	if err != nil {
		return d, err
	}
	return impls.OnServers(d, servers)
}

func (cfg Config) lookupDesign() (impls.Design, error) {
	switch {
	case cfg.Impl == impls.ExecName && len(cfg.Servers) > 0 && cfg.ExecServers == "":
		// The program's servers are the user's, as many as given. With
		// --exec-servers too, they stand in for that design's.
		return impls.ExecDesign(cfg.ExecCmd, "none")
	case cfg.Impl == impls.ExecName:
		return impls.ExecDesign(cfg.ExecCmd, cfg.ExecServers)
	case cfg.ExecCmd != "" || cfg.ExecServers != "":
		return impls.Design{}, fmt.Errorf("--exec-cmd and --exec-servers only apply to --impl exec")
	}
	return impls.Lookup(cfg.Impl)
}

// Resolve validates cfg and looks up its design, workload and faults.
func Resolve(cfg Config) (Resolved, error) {
	r := Resolved{Config: cfg}
	var err error
	if r.Design, err = cfg.LookupDesign(); err != nil {
		return r, &BadConfigError{err}
	}
	if r.Workload, err = workloads.Lookup(cfg.Workload); err != nil {
		return r, &BadConfigError{err}
	}
	if r.Workload.NeedsRenew && !r.Design.Renews {
		return r, bad("workload %s renews leases, and impl %s cannot (its Lock is no lock.Renewer)", cfg.Workload, cfg.Impl)
	}
	if r.Scenario == "" {
		r.Scenario = fmt.Sprintf("%s_%s_%s", impls.FileName(cfg.Impl), cfg.Workload, strings.Join(cfg.Faults, "+"))
	}
	if err := r.Config.Check(); err != nil {
		return r, &BadConfigError{err}
	}
	for _, c := range cfg.StopOnViolation {
		switch {
		case c != checker.MutexCheck && c != checker.ResourceCheck:
			return r, bad("--stop-on-violation: unknown check %q (valid: %s, %s)", c, checker.MutexCheck, checker.ResourceCheck)
		case c == checker.ResourceCheck && !r.Workload.NeedsResource:
			return r, bad("--stop-on-violation: workload %s has no resource to check", cfg.Workload)
		}
	}
	targets, err := parseFaultTargets(cfg.FaultTarget, cfg.Faults)
	if err != nil {
		return r, &BadConfigError{err}
	}
	for _, name := range cfg.Faults {
		f, err := faults.Lookup(name)
		if err != nil {
			return r, &BadConfigError{err}
		}
		if err := f.Applies(r.Design, cfg.Workload); err != nil {
			return r, bad("fault %s does not apply to impl %s: %v", name, cfg.Impl, err)
		}
		if len(cfg.Servers) > 0 {
			if err := faults.CheckUserServers(f, len(cfg.ServerPids) > 0); err != nil {
				return r, &BadConfigError{err}
			}
		}
		t, err := faultTarget(f, targets[name], r.Design, cfg.Clients)
		if err != nil {
			return r, bad("--fault-target: %v", err)
		}
		r.Faults = append(r.Faults, f)
		r.Targets = append(r.Targets, t)
	}
	if r.FaultDuration == 0 {
		r.FaultDuration = 2 * r.TTL
	}
	if r.ClockDelta == 0 {
		r.ClockDelta = 2 * r.TTL
	}
	return r, nil
}

// Check validates the settings that need no lookup: bounds, names and
// the fault list. Resolve applies it to the command line and suite files,
// and LoadRun to a stored config.json, so that a run is never analyzed
// under settings no run could have had. Each message names the flag
// (FieldTerms restates it in config.json's and suite files' terms).
func (cfg Config) Check() error {
	checks := []struct {
		ok  bool
		msg string
	}{
		{cfg.Impl != "", "--impl is required (locktest list impls)"},
		{checkFaultList(cfg.Faults) == nil, fmt.Sprint("--fault: ", checkFaultList(cfg.Faults))},
		{cfg.Clients >= 1 && cfg.Clients <= MaxClients, fmt.Sprintf("--clients %d: must be between 1 and %d (each client is a process: beyond that, start-up crowds out the run and most operations time out)", cfg.Clients, MaxClients)},
		{cfg.Keys >= 1 && cfg.Keys <= MaxKeys, fmt.Sprintf("--keys %d: must be between 1 and %d", cfg.Keys, MaxKeys)},
		{cfg.Duration > 0, "--duration must be positive"},
		{cfg.TTL >= Duration(10*time.Millisecond), "--ttl must be at least 10ms"},
		{cfg.AcquireTimeout > 0, "--acquire-timeout must be positive"},
		{cfg.IOTimeout > 0, "--io-timeout must be positive"},
		{cfg.RetryMin >= 0 && cfg.RetryJitter >= 0, "--retry-min and --retry-jitter must not be negative"},
		{cfg.HoldMin >= 0 && cfg.HoldMax >= cfg.HoldMin, "--hold-min must be ≥ 0 and ≤ --hold-max"},
		{cfg.FaultInterval > 0, "--fault-interval must be positive"},
		{cfg.FaultDuration >= 0, "--fault-duration must not be negative"},
		{cfg.CheckTimeout > 0, "--check-timeout must be positive"},
		{cfg.Latency >= 0 && cfg.Jitter >= 0 && cfg.Jitter <= cfg.Latency, "--jitter must be between 0 and --latency"},
		// NaN fails the comparison; +Inf would pass it and then fail to
		// be written to config.json.
		{cfg.ClockRate > 0 && !math.IsInf(cfg.ClockRate, 1), fmt.Sprintf("--clock-rate %v: must be a finite number above 0 (1 is true speed)", cfg.ClockRate)},
		{faults.CheckMoment(cfg.FaultMoment) == nil, fmt.Sprint("--fault-moment: ", faults.CheckMoment(cfg.FaultMoment))},
		{cluster.CheckBackend(cfg.Backend) == nil, fmt.Sprint("--backend: ", cluster.CheckBackend(cfg.Backend))},
		{cfg.Store != "", `--store "": give a directory (an empty name would write into the current directory)`},
		{CheckName(cfg.Scenario) == nil, fmt.Sprint("--scenario: ", CheckName(cfg.Scenario))},
	}
	for _, c := range checks {
		if !c.ok {
			return errors.New(c.msg)
		}
	}
	return nil
}

// noFault is the fault that injects nothing.
const noFault = "none"

// checkFaultList refuses a fault given twice (two schedules of the same
// fault would race for the same target) and none beside a fault: the run
// would inject the fault while its name says it has none.
func checkFaultList(names []string) error {
	if len(names) == 0 {
		return errors.New("give at least one fault, or none")
	}
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%s is given twice: give each fault once", n)
		}
	}
	if len(names) > 1 && slices.Contains(names, noFault) {
		return fmt.Errorf("%s cannot be combined with other faults: give none alone, or only the faults", noFault)
	}
	return nil
}

// parseFaultTargets reads --fault-target: one target for every fault, or
// comma-separated fault=target pairs.
func parseFaultTargets(spec string, names []string) (map[string]string, error) {
	out := map[string]string{}
	if spec == "" {
		return out, nil
	}
	if !strings.Contains(spec, "=") {
		for _, n := range names {
			out[n] = spec
		}
		return out, nil
	}
	for _, pair := range strings.Split(spec, ",") {
		name, target, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || target == "" {
			return nil, fmt.Errorf("--fault-target %q: give one target, or fault=target pairs separated by commas", spec)
		}
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("--fault-target: %s is not one of the faults given (--fault %s)", name, strings.Join(names, ","))
		}
		out[name] = target
	}
	return out, nil
}

// faultTarget parses and checks the target of f: spec, or f's default.
func faultTarget(f faults.Fault, spec string, d impls.Design, clients int) (faults.Target, error) {
	if spec == "" {
		tf, ok := f.(faults.Targeted)
		if !ok {
			return faults.Target{}, nil
		}
		_, spec = tf.Targets()
	}
	t, err := faults.ParseTarget(spec)
	if err != nil {
		return t, err
	}
	return t, faults.CheckTarget(f, t, d, clients)
}
