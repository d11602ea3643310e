package runner

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/cluster/remote"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/protocol"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// lockConfig is the part of every lock client's configuration the run's
// settings give; the run adds each client's own (Client, Nodes) and where
// an exec program runs.
func lockConfig(cfg scenario.Config) lock.Config {
	return lock.Config{
		TTL: time.Duration(cfg.TTL), AcquireTimeout: time.Duration(cfg.AcquireTimeout),
		IOTimeout: time.Duration(cfg.IOTimeout), RetryMin: time.Duration(cfg.RetryMin),
		RetryJitter: time.Duration(cfg.RetryJitter), Seed: cfg.Seed, Persist: cfg.Persist, ExecCmd: cfg.ExecCmd,
		ExecCheckpoints: cfg.ExecCheckpoints,
	}
}

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
	scenario.Config
	Design   impls.Design
	Workload workloads.Workload
	Faults   []faults.Fault
	// Targets holds each fault's target, in Faults order.
	Targets []faults.Target
	// Reproduce, when set, is the command line that runs the scenario
	// again, in place of Command: a test that calls locktesting.Run is
	// reproduced by go test, not by a locktest command.
	Reproduce string
	// AskedNetwork is the --network the run was given ("auto" for none);
	// Network is what it resolved to, which changes with the backend a
	// suite sets for all its runs, while this does not.
	AskedNetwork string
	// NetworkNote says why the run uses the proxy though it asked for
	// --network netns or a link fault of it could have had the kernel's;
	// its Network says proxy then.
	NetworkNote string
}

// Networks of --network. NetworkAuto (or no value) is the default: the
// lab wherever a run can have one, for its faults are the kernel's, and
// the proxy elsewhere, saying why. NetworkFirewall is the kernel's network
// of a run with --nodes: the faults are rules in the servers' hosts'
// firewalls.
const (
	NetworkAuto     = "auto"
	NetworkProxy    = "proxy"
	NetworkNetns    = "netns"
	NetworkFirewall = "firewall"
)

// Network is what a run of cfg uses for its links before its faults are
// weighed: the one --network names, or for auto the lab where the
// servers are the run's own processes and this machine lets it make
// namespaces, and the proxy otherwise. A command that starts runs asks
// it to know whether to move into a namespace of its own first.
func Network(cfg scenario.Config) string {
	if cfg.Network != "" && cfg.Network != NetworkAuto {
		return cfg.Network
	}
	if outsideLab(cfg) != "" || cluster.LabSupport() != nil {
		return NetworkProxy
	}
	return NetworkNetns
}

// outsideLab says why the servers of cfg cannot be in a lab, or "".
func outsideLab(cfg scenario.Config) string {
	switch {
	case len(cfg.Nodes) > 0 || cfg.Backend == remote.BackendName:
		return "--nodes runs the servers on other hosts, outside any namespace locktest makes"
	case cfg.Backend != "" && cfg.Backend != cluster.LocalBackend:
		return fmt.Sprintf("--backend %s runs servers in containers, which locktest's lab cannot hold", cfg.Backend)
	case len(cfg.Servers) > 0:
		return "--servers are your servers, outside any namespace locktest makes"
	}
	return ""
}

// ResolveNetwork decides what makes the run's link faults. An explicit
// netns is refused where it cannot be had at all (LabSupport); it gives
// way to the proxy, saying why, where the run's servers are not its own
// processes or a fault needs a proxy (a delay: no netem). auto does the
// same without refusing, and says why only when the run has a link fault
// the choice decides. A fault only the kernel makes (packet loss, one-way
// partitions) refuses the proxy. A suite that sets --network or
// --backend for every run resolves again.
func ResolveNetwork(r *Resolved) error {
	r.NetworkNote = ""
	if r.AskedNetwork == "" {
		r.AskedNetwork = cmp.Or(r.Network, NetworkAuto)
	}
	r.Network = r.AskedNetwork
	auto := r.Network == NetworkAuto
	var kernelOnly, proxyOnly, links []string
	for _, f := range r.Faults {
		t := f.Traits()
		switch {
		case t.Net == faults.NetKernel:
			kernelOnly = append(kernelOnly, f.Name())
		case t.Net == faults.NetProxy:
			proxyOnly = append(proxyOnly, f.Name())
		}
		if t.Links {
			links = append(links, f.Name())
		}
	}
	if len(r.Nodes) > 0 {
		return resolveHostsNetwork(r, kernelOnly, proxyOnly, links)
	}
	why := outsideLab(r.Config)
	if why == "" && len(proxyOnly) > 0 {
		why = fmt.Sprintf("fault %s delays packets, which needs netem, which locktest does not count on", proxyOnly[0])
	}
	if why == "" && (auto || r.Network == NetworkNetns) {
		if err := cluster.LabSupport(); err != nil {
			if !auto {
				return &BadConfigError{fmt.Errorf("--network netns: %w: run as root or use --network proxy", err)}
			}
			why = err.Error()
		}
	}
	switch {
	case r.Network == NetworkProxy && len(kernelOnly) > 0:
		return bad("fault %s needs --network netns: a proxy forwards the bytes of connections, not packets", kernelOnly[0])
	case r.Network == NetworkProxy:
		return nil
	case why == "":
		r.Network = NetworkNetns
		return nil
	case len(kernelOnly) > 0:
		return bad("fault %s needs the kernel's network (--network netns), but %s: run them apart", kernelOnly[0], why)
	}
	asked := r.Network
	r.Network = NetworkProxy
	switch {
	case asked == NetworkNetns:
		r.NetworkNote = "asked for --network netns, used the proxy: " + why
	case len(links) > 0:
		r.NetworkNote = fmt.Sprintf("fault %s acts through the proxy, not the kernel: %s", links[0], why)
	}
	return nil
}

// resolveHostsNetwork decides what makes the link faults of a run with
// --nodes: the proxy on this host unless --network firewall asks for the
// hosts' firewalls, or a fault only the kernel makes needs them (auto):
// locktest changes a host's firewall only for a run that asked for it.
// The clients all dial from this host's address, which a rule on a host
// cannot tell apart: a link fault aimed at one client is refused there.
func resolveHostsNetwork(r *Resolved, kernelOnly, proxyOnly, links []string) error {
	switch {
	case r.Network == NetworkProxy && len(kernelOnly) > 0:
		return bad("fault %s needs the kernel's network: with --nodes, --network firewall (rules in the hosts' firewalls)", kernelOnly[0])
	case r.Network == NetworkAuto && len(kernelOnly) == 0:
		r.Network = NetworkProxy
		if len(links) > 0 {
			r.NetworkNote = fmt.Sprintf("fault %s acts through the proxy on this host; --network firewall would make it in the hosts' firewalls", links[0])
		}
		return nil
	case r.Network == NetworkProxy:
		return nil
	case len(proxyOnly) > 0 && len(kernelOnly) > 0:
		return bad("fault %s needs the proxy (no netem) and fault %s the hosts' firewalls: run them apart", proxyOnly[0], kernelOnly[0])
	case len(proxyOnly) > 0:
		r.Network = NetworkProxy
		r.NetworkNote = fmt.Sprintf("asked for --network firewall, used the proxy: fault %s delays packets, which needs netem, which locktest does not count on", proxyOnly[0])
		return nil
	}
	if len(r.Servers) > 0 {
		return bad("--network firewall with --servers: locktest makes kernel faults on the hosts only for servers it starts there; use --network proxy")
	}
	r.Network = NetworkFirewall
	for i, f := range r.Faults {
		if f.Traits().Links && i < len(r.Targets) && r.Targets[i].OneClient() {
			return bad("fault %s --fault-target %s: with --network firewall the clients share this host's address, which the hosts' rules cannot tell apart: aim at a node (node, node/clients, …) or use --network proxy",
				f.Name(), r.Targets[i].Spec)
		}
	}
	return nil
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
func LookupDesign(cfg scenario.Config) (impls.Design, error) {
	d, err := lookupDesign(cfg)
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
	for i := range servers {
		servers[i].Remote = len(cfg.Nodes) > 0 // their pids are the hosts'
	}
	return impls.OnServers(d, servers)
}

func lookupDesign(cfg scenario.Config) (impls.Design, error) {
	servers := cfg.ExecServers
	switch {
	case cfg.Impl == impls.ExecName && len(cfg.Servers) > 0 && cfg.ExecServers == "":
		// The program's servers are the user's, as many as given. With
		// --exec-servers too, they stand in for that design's.
		servers = "none"
	case cfg.Impl == impls.ExecName:
	case cfg.ExecCmd != "" || cfg.ExecServers != "" || len(cfg.ExecCheckpoints) > 0 || cfg.ExecName != "":
		return impls.Design{}, fmt.Errorf("--exec-cmd, --exec-servers, --exec-name and --exec-checkpoints only apply to --impl exec")
	default:
		return impls.Lookup(cfg.Impl)
	}
	d, err := impls.ExecDesign(cfg.ExecCmd, servers)
	if err != nil {
		return d, err
	}
	for i, p := range cfg.ExecCheckpoints {
		if err := protocol.CheckPoint(p); err != nil {
			return d, fmt.Errorf("--exec-checkpoints: %w", err)
		}
		if slices.Contains(cfg.ExecCheckpoints[:i], p) {
			return d, fmt.Errorf("--exec-checkpoints: %q is listed twice", p)
		}
	}
	d.Checkpoints = cfg.ExecCheckpoints
	if n := cfg.ExecName; n != "" {
		if err := CheckName(n); err != nil {
			return d, fmt.Errorf("--exec-name: %w", err)
		}
		if _, err := impls.Lookup(n); err == nil {
			return d, fmt.Errorf("--exec-name %s: a registered design has that name; give your lock its own", n)
		}
	}
	return d, nil
}

// DesignName is the name a run's design goes by: the user's name for
// their program (--exec-name), or the impl.
func DesignName(cfg scenario.Config) string {
	if cfg.ExecName != "" {
		return cfg.ExecName
	}
	return cfg.Impl
}

// Resolve validates cfg and looks up its design, workload and faults.
func Resolve(cfg scenario.Config) (Resolved, error) {
	var err error
	if cfg.Nodes, err = remote.ExpandHosts(cfg.Nodes); err != nil {
		return Resolved{Config: cfg}, &BadConfigError{err}
	}
	r := Resolved{Config: cfg}
	if r.Design, err = LookupDesign(cfg); err != nil {
		return r, &BadConfigError{err}
	}
	if r.Workload, err = workloads.Lookup(cfg.Workload); err != nil {
		return r, &BadConfigError{err}
	}
	if r.Workload.NeedsRenew && !r.Design.Renews {
		return r, bad("workload %s renews leases, and impl %s cannot (its Lock is no lock.Renewer)", cfg.Workload, cfg.Impl)
	}
	if err := checkFencing(r); err != nil {
		return r, &BadConfigError{err}
	}
	if r.Scenario == "" {
		r.Scenario = fmt.Sprintf("%s_%s_%s", impls.FileName(DesignName(cfg)), cfg.Workload, strings.Join(cfg.Faults, "+"))
	}
	if err := Check(r.Config); err != nil {
		return r, &BadConfigError{err}
	}
	if len(cfg.Nodes) > 0 {
		r.Backend = remote.BackendName
	}
	for _, c := range cfg.StopOnViolation {
		switch {
		case c != checker.MutexCheck && c != checker.ResourceCheck:
			return r, bad("--stop-on-violation: unknown check %q (valid: %s, %s)", c, checker.MutexCheck, checker.ResourceCheck)
		case c == checker.ResourceCheck && !r.Workload.NeedsResource:
			return r, bad("--stop-on-violation: workload %s has no resource to check", cfg.Workload)
		}
	}
	if _, redis := r.Design.Binaries["redis-server"]; cfg.Eviction != "" && !redis {
		return r, bad("--eviction %s: impl %s runs no Redis server of its own, whose maxmemory-policy it sets; drop --eviction", cfg.Eviction, cfg.Impl)
	}
	if err := checkTimeoutServers(cfg, r.Design); err != nil {
		return r, &BadConfigError{err}
	}
	if cfg.Checkpoint != "" && !slices.Contains(r.Design.Checkpoints, cfg.Checkpoint) {
		return r, bad("--checkpoint %q: impl %s reaches no such checkpoint; it reaches: %s", cfg.Checkpoint, cfg.Impl, checkpointList(r.Design))
	}
	targets, err := parseFaultTargets(cfg.FaultTarget, faults.MemberNames(cfg.Faults))
	if err != nil {
		return r, &BadConfigError{err}
	}
	var fs []faults.Fault
	for _, item := range cfg.Faults {
		members, err := faults.LookupItem(item)
		if err != nil {
			return r, &BadConfigError{err}
		}
		fs = append(fs, members...)
	}
	paired := len(fs) > len(cfg.Faults)
	if cfg.FaultDuration2 != 0 && !paired {
		return r, bad("--fault-duration2 is the length of the second fault of a pair, and --fault %s has no pair (a+b): drop it, or pair two faults",
			strings.Join(cfg.Faults, ","))
	}
	for _, f := range fs {
		name := f.Name()
		if err := f.Applies(r.Design, faults.Workload{Name: cfg.Workload, Resource: r.Workload.NeedsResource}); err != nil {
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
	atCheckpoint := func(f faults.Fault) bool { return f.Traits().AtCheckpoint }
	if cfg.Checkpoint != "" && !slices.ContainsFunc(r.Faults, atCheckpoint) {
		var names []string
		for _, f := range faults.All() {
			if atCheckpoint(f) {
				names = append(names, f.Name())
			}
		}
		return r, bad("--checkpoint %q: no fault of the run stops a client at a checkpoint it names: add %s to --fault, or drop --checkpoint",
			cfg.Checkpoint, strings.Join(names, " or "))
	}
	if err := ResolveNetwork(&r); err != nil {
		return r, err
	}
	if r.FaultDuration == 0 {
		r.FaultDuration = 2 * r.TTL
	}
	if r.FaultDuration2 == 0 && paired {
		r.FaultDuration2 = r.FaultDuration
	}
	if r.ClockDelta == 0 {
		r.ClockDelta = 2 * r.TTL
	}
	return r, nil
}

// checkNodes validates --nodes and the SSH settings that go with it.
func checkNodes(cfg scenario.Config) error {
	ssh := cfg.SSHUser != "" || cfg.SSHKey != "" || cfg.SSHKnownHosts != "" || cfg.SSHDir != ""
	switch {
	case len(cfg.Nodes) == 0 && cfg.Backend == remote.BackendName:
		return errors.New("--backend ssh needs --nodes HOST,...: the hosts to run the servers on")
	case len(cfg.Nodes) == 0 && ssh:
		return errors.New("--ssh-user, --ssh-key, --ssh-known-hosts and --ssh-dir only apply with --nodes")
	case len(cfg.Nodes) == 0:
		return nil
	case cfg.Backend != "" && cfg.Backend != remote.BackendName:
		return fmt.Errorf("--nodes runs the servers on other hosts over SSH: drop --backend %s", cfg.Backend)
	case len(cfg.Servers) > 0 && len(cfg.ServerPids) == 0:
		return errors.New("--nodes with --servers pauses your servers on their hosts, by pid: give --server-pids, or drop --nodes to reach them by address alone")
	case cfg.SSHDir != "":
		if err := remote.CheckDir(cfg.SSHDir); err != nil {
			return err
		}
	}
	if err := remote.ParseHosts(cfg.Nodes); err != nil {
		return err
	}
	// Your servers on the hosts (--servers with --nodes): each pid is
	// looked for on the host its address names.
	var hosts []string
	for _, n := range cfg.Nodes {
		hosts = append(hosts, remote.HostName(n))
	}
	for _, a := range cfg.Servers {
		if host, _, err := net.SplitHostPort(a); err == nil && !slices.Contains(hosts, host) {
			return fmt.Errorf("--servers %s: %s is none of the hosts of --nodes (%s), where its pid would be: name the host as --nodes does",
				a, host, strings.Join(hosts, ", "))
		}
	}
	return nil
}

// Check validates the settings that need no lookup: bounds, names and
// the fault list. Resolve applies it to the command line and suite files,
// and LoadRun to a stored config.json, so that a run is never analyzed
// under settings no run could have had. Each message names the flag
// (FieldTerms restates it in config.json's and suite files' terms).
func Check(cfg scenario.Config) error {
	checks := []struct {
		ok  bool
		msg string
	}{
		{cfg.Impl != "", "--impl is required (" + scenario.Program() + " list impls)"},
		{checkFaultList(cfg.Faults) == nil, fmt.Sprint("--fault: ", checkFaultList(cfg.Faults))},
		{cfg.Clients >= 1 && cfg.Clients <= scenario.MaxClients, fmt.Sprintf("--clients %d: must be between 1 and %d (each client is a process: beyond that, start-up crowds out the run and most operations time out)", cfg.Clients, scenario.MaxClients)},
		{cfg.Keys >= 1 && cfg.Keys <= scenario.MaxKeys, fmt.Sprintf("--keys %d: must be between 1 and %d", cfg.Keys, scenario.MaxKeys)},
		{cfg.Duration > 0, "--duration must be positive"},
		{cfg.TTL >= scenario.Duration(10*time.Millisecond), "--ttl must be at least 10ms"},
		{cfg.AcquireTimeout > 0, "--acquire-timeout must be positive"},
		{cfg.IOTimeout > 0, "--io-timeout must be positive"},
		{checkTimeoutValues(cfg) == nil, fmt.Sprint(checkTimeoutValues(cfg))},
		{cfg.RetryMin >= 0 && cfg.RetryJitter >= 0, "--retry-min and --retry-jitter must not be negative"},
		{cfg.HoldMin >= 0 && cfg.HoldMax >= cfg.HoldMin, "--hold-min must be ≥ 0 and ≤ --hold-max"},
		{cfg.FaultInterval > 0, "--fault-interval must be positive"},
		{cfg.FaultDuration >= 0 && cfg.FaultDuration2 >= 0, "--fault-duration and --fault-duration2 must not be negative"},
		{cfg.CheckTimeout > 0, "--check-timeout must be positive"},
		{cfg.Latency >= 0 && cfg.Jitter >= 0 && cfg.Jitter <= cfg.Latency, "--jitter must be between 0 and --latency"},
		// NaN fails the comparison; +Inf would pass it and then fail to
		// be written to config.json.
		{cfg.ClockRate > 0 && !math.IsInf(cfg.ClockRate, 1), fmt.Sprintf("--clock-rate %v: must be a finite number above 0 (1 is true speed)", cfg.ClockRate)},
		{workloads.CheckFencing(cfg.Fencing) == nil, fmt.Sprint("--fencing: ", workloads.CheckFencing(cfg.Fencing))},
		{faults.CheckMoment(cfg.FaultMoment) == nil, fmt.Sprint("--fault-moment: ", faults.CheckMoment(cfg.FaultMoment))},
		{cfg.Network == "" || slices.Contains([]string{NetworkAuto, NetworkProxy, NetworkNetns, NetworkFirewall}, cfg.Network),
			fmt.Sprintf("--network %q: valid are %s, %s, %s and (with --nodes) %s", cfg.Network, NetworkAuto, NetworkNetns, NetworkProxy, NetworkFirewall)},
		{cfg.Network != NetworkFirewall || len(cfg.Nodes) > 0, "--network firewall is the firewalls of the --nodes hosts: give --nodes, or use --network netns for the servers here"},
		{cfg.Network != NetworkNetns || len(cfg.Nodes) == 0, "--network netns is a lab of namespaces on this machine, which holds no server of --nodes: use --network firewall (rules in the hosts' firewalls) or proxy"},
		{cfg.Eviction == "" || slices.Contains(cluster.EvictionPolicies, cfg.Eviction), fmt.Sprintf("--eviction %q: valid are %s", cfg.Eviction, strings.Join(cluster.EvictionPolicies, ", "))},
		{cfg.Loss > 0 && cfg.Loss <= 1, fmt.Sprintf("--loss %v: must be a probability above 0 and at most 1", cfg.Loss)},
		{cluster.CheckBackend(cfg.Backend) == nil, fmt.Sprint("--backend: ", cluster.CheckBackend(cfg.Backend))},
		{checkNodes(cfg) == nil, fmt.Sprint(checkNodes(cfg))},
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

// checkFencing refuses a fencing other than the default where the run has
// no resource node that checks tokens: it would change nothing while the
// run's name and config said it did.
func checkFencing(r Resolved) error {
	if r.Fencing == workloads.FenceReadsWrites {
		return nil
	}
	switch {
	case !r.Workload.NeedsResource:
		return fmt.Errorf("--fencing %s: workload %s protects no resource; give a workload that does (counter)", r.Fencing, r.Workload.Name)
	case r.Design.GuardsWrites:
		return fmt.Errorf("--fencing %s: impl %s keeps the data in its own guarded transactions, not on a resource node; drop --fencing", r.Fencing, r.Impl)
	case !r.Design.Fenced && r.Impl != impls.ExecName:
		return fmt.Errorf("--fencing %s: impl %s hands out no fencing tokens, so the resource checks none; give a fenced design", r.Fencing, r.Impl)
	}
	return nil
}

// checkFaultList refuses a fault given twice, alone or in a pair (two
// schedules of the same fault would race for the same target), none
// beside a fault (the run would inject the fault while its name says it
// has none), and what no pair can be by its names (faults.CheckItem).
func checkFaultList(items []string) error {
	if len(items) == 0 {
		return errors.New("give at least one fault, or none")
	}
	for _, it := range items {
		if err := faults.CheckItem(it); err != nil {
			return err
		}
	}
	names := faults.MemberNames(items)
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%s is given twice: give each fault once", n)
		}
	}
	if len(names) > 1 && slices.Contains(names, faults.None) {
		return fmt.Errorf("%s cannot be combined with other faults: give none alone, or only the faults", faults.None)
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
		if spec = f.Traits().Target; spec == "" {
			return faults.Target{}, nil
		}
	}
	t, err := faults.ParseTarget(spec)
	if err != nil {
		return t, err
	}
	return t, faults.CheckTarget(f, t, d, clients)
}

// checkpointList names d's checkpoints for a refusal.
func checkpointList(d impls.Design) string {
	if len(d.Checkpoints) == 0 {
		return "none (an exec program announces its own: --exec-checkpoints)"
	}
	return strings.Join(d.Checkpoints, ", ")
}
