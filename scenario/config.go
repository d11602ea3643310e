package scenario

import (
	"encoding/json"
	"errors"
	"time"

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
	// FaultDuration2 is how long the second fault of a pair ("a+b")
	// lasts, so that each fault of a pair has its own size; 0 means
	// FaultDuration.
	FaultDuration2 Duration `json:"fault_duration2,omitempty"`
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
	// Fencing is what the protected resource checks fencing tokens on:
	// workloads.FenceReadsWrites or FenceWrites.
	Fencing string `json:"fencing"`
	// ExecCmd is the user's lock program for --impl exec, and ExecServers
	// the registered design whose servers it talks to (or "none").
	ExecCmd     string `json:"exec_cmd,omitempty"`
	ExecServers string `json:"exec_servers,omitempty"`
	// ExecName is what the user calls their program's lock: summaries,
	// compare, serve and suites show it where they show a design, so that
	// two programs are two designs rather than one "exec" split by path.
	ExecName string `json:"exec_name,omitempty"`
	// ExecCheckpoints are the checkpoints the program announces
	// (docs/protocol.md): the exec design lists them, so that a fault can
	// stop a client at one and a search tries each.
	ExecCheckpoints []string `json:"exec_checkpoints,omitempty"`
	// Checkpoint is where the faults that strike at a checkpoint of the
	// run's choosing (Traits.AtCheckpoint) stop a client; "" is the
	// design's first.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Servers are lock servers the user runs (host:port), the design's
	// nodes in its order, which the run uses instead of starting its own
	// (impls.OnServers): a lock whose servers locktest cannot start still
	// meets link faults. ServerPids are their processes, in the same
	// order, for the faults that pause servers.
	Servers    []string `json:"servers,omitempty"`
	ServerPids []string `json:"server_pids,omitempty"`
	// Backend runs the servers: "local" processes (the default),
	// "docker" containers (cluster.RegisterBackend), or "ssh": the hosts
	// of Nodes.
	Backend string `json:"backend,omitempty"`
	// Nodes are other hosts the servers run on, reached over SSH as
	// Jepsen's control node reaches its nodes (cluster/remote), with the
	// login, key, known_hosts file and directory the SSH settings give.
	Nodes         []string `json:"nodes,omitempty"`
	SSHUser       string   `json:"ssh_user,omitempty"`
	SSHKey        string   `json:"ssh_key,omitempty"`
	SSHKnownHosts string   `json:"ssh_known_hosts,omitempty"`
	SSHDir        string   `json:"ssh_dir,omitempty"`
	// Network is what makes the link faults: "netns" (each server and
	// client in a network namespace of its own, faults as firewall rules;
	// cluster.Lab), "proxy" (a TCP proxy per path), or "auto" / "" (the
	// default: netns where the machine allows it). A resolved run records
	// the one it used.
	Network string `json:"network,omitempty"`
	// Loss is the probability with which the loss fault drops a packet.
	Loss float64 `json:"loss,omitempty"`
	// KeepData keeps the servers' data of a valid run too; by default
	// only a run that is not valid keeps it, for a post-mortem (an etcd
	// run's is 184 MB).
	KeepData bool `json:"keep_data,omitempty"`
	// StopOnViolation names checks (mutex, resource) that end the run as
	// soon as each of them finds a violation in the history so far: the
	// verdict cannot change, and an expected anomaly costs less time.
	StopOnViolation []string `json:"stop_on_violation,omitempty"`

	// The servers' connection timeouts (cluster.Timeout): under a
	// partition the kernel makes, they decide whether a server ends the
	// session of a client it no longer hears, and with it the locks the
	// session held, so a verdict holds under them. Each is one setting
	// for every design, which each server maps to its own knobs (postgres
	// tcp_keepalives_*, redis tcp-keepalive, …): a user asks for "the
	// server's keepalive" and a sweep varies one value, whatever the
	// design. 0 leaves each server at its own default, and config.json
	// then omits the setting, as runs from before it had none.
	ServerKeepalive   Duration `json:"server_keepalive,omitempty"`
	ServerUserTimeout Duration `json:"server_user_timeout,omitempty"`
	ServerIdleTimeout Duration `json:"server_idle_timeout,omitempty"`
	ServerIOTimeout   Duration `json:"server_io_timeout,omitempty"`
	// Eviction is the lock's Redis servers' maxmemory-policy, "" for the
	// server's default (noeviction). A cache that evicts may drop a held
	// lock's key under memory pressure: two holders with no crash, pause
	// or partition.
	Eviction string `json:"eviction,omitempty"`
}

// Defaults returns the configuration the CLI and suites start from: the
// settings' defaults.
func Defaults() Config {
	s := time.Second
	ms := time.Millisecond
	return Config{
		Workload: "counter", Fencing: workloads.FenceReadsWrites, Faults: []string{"none"}, Clients: 5, Keys: 1, Seed: 1,
		Duration: Duration(15 * s), TTL: Duration(s), AcquireTimeout: Duration(5 * s), IOTimeout: Duration(500 * ms),
		RetryMin: Duration(20 * ms), RetryJitter: Duration(30 * ms), HoldMin: Duration(20 * ms), HoldMax: Duration(60 * ms),
		FaultInterval: Duration(3 * s), CheckTimeout: Duration(60 * s), Store: "store",
		Latency: Duration(100 * ms), Jitter: Duration(50 * ms), ClockRate: 1, Loss: 0.3,
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
