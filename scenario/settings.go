package scenario

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/locktest/locktest/reports"
)

// Setting is one knob of a run. Settings is the only list of them: the
// flags of locktest run and their help, Config.Command, the settings a
// suite scenario takes and config.json all follow it, so a knob cannot be
// settable in one place and lost in another.
type Setting struct {
	// Flag is the option of locktest run, without the dashes.
	Flag string
	// Field is the Config field the setting sets. Its json tag is the
	// setting's Name.
	Field string
	Help  string
	// Arg names the flag's value in the help; empty: from the field's type.
	Arg string
	// Always: Command gives the setting even at its default, so that the
	// command says what it runs.
	Always bool
	// Incidental: the setting does not change what the run does, only
	// which of its schedules it draws (the seed), what it is called, how
	// long its check may take or whether it ends at its first violation;
	// compare summarizes runs that differ in it together.
	Incidental bool
}

// Settings are the knobs of a run, in the order the help lists them.
// Defaults gives their defaults.
var Settings = []Setting{
	{Flag: "impl", Field: "Impl", Always: true, Help: "lock design to test (locktest list impls)"},
	{Flag: "exec-cmd", Field: "ExecCmd", Arg: "CMD", Help: "with --impl exec: your lock client's command line, run once per worker (docs/protocol.md)"},
	{Flag: "exec-servers", Field: "ExecServers", Help: "with --impl exec: the design whose servers to start (e.g. redis-single), or none"},
	{Flag: "exec-name", Field: "ExecName", Arg: "NAME", Help: "with --impl exec: the name your lock goes by in summaries, compare, serve and suites (default: exec)"},
	{Flag: "exec-checkpoints", Field: "ExecCheckpoints", Arg: "NAME,...", Help: "with --impl exec: the checkpoints your program announces inside acquire and release, where faults can stop it (docs/protocol.md)"},
	{Flag: "checkpoint", Field: "Checkpoint", Arg: "NAME", Help: "where pause-at stops a client: one of the design's checkpoints (locktest list impls; default: its first)"},
	{Flag: "servers", Field: "Servers", Arg: "ADDR,...", Help: "lock servers you run, host:port in the design's node order, used instead of starting the design's (link faults reach them through proxies); runs write lock keys: use scratch instances (docs/protocol.md)"},
	{Flag: "server-pids", Field: "ServerPids", Arg: "PID,...", Incidental: true, Help: "with --servers: their process ids, in the same order, so that pause-node can stop and continue them (on the host of --nodes the address names, if any)"},
	{Flag: "nodes", Field: "Nodes", Arg: "HOST,...", Help: "run the servers on these hosts over SSH ([user@]host[:port], or @FILE with one a line; nodes are handed out in turn), as Jepsen's control node does; what they need and what locktest changes there: docs/remote.md"},
	{Flag: "ssh-user", Field: "SSHUser", Arg: "USER", Incidental: true, Help: "with --nodes: the login on hosts that name none (default: $USER)"},
	{Flag: "ssh-key", Field: "SSHKey", Arg: "FILE", Incidental: true, Help: "with --nodes: the private key to log in with (default: the agent at SSH_AUTH_SOCK)"},
	{Flag: "ssh-known-hosts", Field: "SSHKnownHosts", Arg: "FILE", Incidental: true, Help: "with --nodes: the known_hosts file the hosts' keys are checked against (default: ~/.ssh/known_hosts)"},
	{Flag: "ssh-dir", Field: "SSHDir", Arg: "DIR", Incidental: true, Help: "with --nodes: where runs keep their files on the hosts, a directory of their own each (default: /tmp/locktest)"},
	{Flag: "workload", Field: "Workload", Always: true, Help: "what each client does (locktest list workloads)"},
	{Flag: "fencing", Field: "Fencing", Arg: "MODE", Help: "what the protected resource checks fencing tokens on: reads-writes (each read and write) or writes (writes only, Kleppmann's storage: a read-modify-write can then lose updates, docs/anomalies.md)"},
	{Flag: "fault", Field: "Faults", Arg: "FAULT,...", Always: true, Help: "faults to inject (locktest list faults); a+b is a pair, whose two faults strike together"},
	{Flag: "clients", Field: "Clients", Always: true, Help: fmt.Sprintf("number of client processes (at most %d)", MaxClients)},
	{Flag: "keys", Field: "Keys", Help: fmt.Sprintf("number of lock keys (at most %d)", MaxKeys)},
	{Flag: "seed", Field: "Seed", Always: true, Incidental: true, Help: "seed of the fault schedule and client choices"},
	{Flag: "duration", Field: "Duration", Always: true, Help: "how long clients run before the final heal"},
	{Flag: "ttl", Field: "TTL", Help: "lease TTL of the lock"},
	{Flag: "acquire-timeout", Field: "AcquireTimeout", Help: "deadline of one acquire call"},
	{Flag: "io-timeout", Field: "IOTimeout", Help: "timeout of each request to a server"},
	{Flag: "server-keepalive", Field: "ServerKeepalive", Help: "the servers probe a connection silent this long, then every third of it, and drop it after 3 unanswered probes (whole seconds; 0: each server's own default)"},
	{Flag: "server-user-timeout", Field: "ServerUserTimeout", Help: "the servers' kernels drop a connection whose sent data stays unacknowledged this long, TCP_USER_TIMEOUT (whole ms; postgres, pgbouncer; 0: their default)"},
	{Flag: "server-idle-timeout", Field: "ServerIdleTimeout", Help: "the servers end a client's session that sent nothing this long (whole seconds; 0: each server's own default)"},
	{Flag: "server-io-timeout", Field: "ServerIOTimeout", Help: "the servers drop a connection whose request or reply stalls this long mid-way (whole seconds; mariadb; 0: its default)"},
	{Flag: "retry-min", Field: "RetryMin", Help: "minimum sleep between acquire tries"},
	{Flag: "retry-jitter", Field: "RetryJitter", Help: "random extra sleep between tries, in [0, jitter)"},
	{Flag: "hold-min", Field: "HoldMin", Help: "minimum time a client holds the lock (counter: between read and write)"},
	{Flag: "hold-max", Field: "HoldMax", Help: "maximum hold time"},
	{Flag: "fault-interval", Field: "FaultInterval", Help: "mean quiet time between faults"},
	{Flag: "fault-duration", Field: "FaultDuration", Help: "how long each fault lasts (default: 2×TTL)"},
	{Flag: "fault-duration2", Field: "FaultDuration2", Help: "how long the second fault of a pair (--fault a+b) lasts (default: --fault-duration)"},
	{Flag: "fault-target", Field: "FaultTarget", Arg: "TARGET", Help: "what the faults aim at: one target (holder, c3, majority, link:c0:redis-0 …), or fault=target,… (default: each fault's own, locktest list faults)"},
	{Flag: "fault-moment", Field: "FaultMoment", Arg: "MOMENT", Help: "align each strike to a lock moment: any (the wall-clock schedule), grant, near-expiry, acquire or release"},
	{Flag: "latency", Field: "Latency", Help: "delay the latency fault adds to each request"},
	{Flag: "jitter", Field: "Jitter", Help: "random ± variation of the latency fault's delay"},
	{Flag: "clock-delta", Field: "ClockDelta", Help: "how far clock faults move a clock, negative for back (default: +2×TTL)"},
	{Flag: "clock-rate", Field: "ClockRate", Help: "how fast client-clock-skew makes a client's clock run (1: true speed)"},
	{Flag: "eviction", Field: "Eviction", Arg: "POLICY", Help: "what the lock's Redis servers drop when full, their maxmemory-policy: noeviction (refuse writes), allkeys-lru, volatile-lru, allkeys-lfu, volatile-lfu, allkeys-random, volatile-random, volatile-ttl (default: the server's, noeviction); the memory-pressure fault fills them"},
	{Flag: "persist", Field: "Persist", Help: "servers persist every write before acknowledging it, so kill-node restarts them with their data"},
	{Flag: "network", Field: "Network", Help: "what makes link faults: netns (servers and clients in network namespaces, faults as firewall rules; needs root), proxy (a TCP proxy per path), firewall (with --nodes: faults as rules in the hosts' firewalls; docs/remote.md), or auto (default: netns where the machine allows it, proxy otherwise and with --nodes; docs/network.md)"},
	{Flag: "loss", Field: "Loss", Arg: "P", Help: "probability with which the loss fault drops each packet (0 < P ≤ 1)"},
	{Flag: "backend", Field: "Backend", Help: "what runs the servers: local processes (default) or docker containers (locktest images build)"},
	{Flag: "keep-data", Field: "KeepData", Incidental: true, Help: "keep the servers' data directories of a valid run too (a run that is not valid always keeps them; logs are always kept)"},
	{Flag: "stop-on-violation", Field: "StopOnViolation", Arg: "CHECK,...", Incidental: true, Help: "end the run before its duration once each named check (mutex, resource) finds a violation: the verdict cannot change any more"},
	{Flag: "check-timeout", Field: "CheckTimeout", Incidental: true, Help: "time limit of the porcupine checks, both models together (then the verdict is unknown)"},
	{Flag: "scenario", Field: "Scenario", Incidental: true, Help: "name of the run in the store (default: impl_workload_faults)"},
	// Store says where the run is kept, not what it is: it has no Name,
	// so neither config.json nor Command holds it.
	{Flag: "store", Field: "Store", Arg: "DIR", Help: "directory runs are stored in"},
}

// Name is the setting's name in config.json and in suite files (the json
// tag of its field); "" if it is not stored.
func (s Setting) Name() string {
	f, ok := reflect.TypeFor[Config]().FieldByName(s.Field)
	if !ok {
		panic("scenario.Settings: Config has no field " + s.Field)
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// Ptr returns the address of the setting's field in cfg: a *string, *int,
// *int64, *float64, *bool, *Duration or *[]string.
func (s Setting) Ptr(cfg *Config) any {
	return reflect.ValueOf(cfg).Elem().FieldByName(s.Field).Addr().Interface()
}

// Value binds the setting to its field in cfg, as a flag.Value.
func (s Setting) Value(cfg *Config) Value { return Value{s.Ptr(cfg)} }

// ComparedSettings are the settings compare keeps runs apart by: every
// stored one that is not incidental.
func ComparedSettings() []reports.Setting {
	var out []reports.Setting
	for _, s := range Settings {
		if s.Name() != "" && !s.Incidental {
			out = append(out, reports.Setting{Name: s.Name(), Flag: s.Flag})
		}
	}
	return out
}

// SettingByFlag returns the setting of --flag.
func SettingByFlag(flag string) (Setting, bool) {
	for _, s := range Settings {
		if s.Flag == flag {
			return s, true
		}
	}
	return Setting{}, false
}

var flagRe = regexp.MustCompile(`--([a-z][a-z-]*)`)

// FieldTerms restates msg, which names command-line flags (--hold-min),
// in the names config.json and suite files give the same settings
// (hold_min), and returns the first setting it names ("" if none): a
// problem found in a file points at the field to fix there.
func FieldTerms(msg string) (restated, first string) {
	name := func(flag string) string {
		if s, ok := SettingByFlag(flag); ok && s.Name() != "" {
			return s.Name()
		}
		return strings.ReplaceAll(flag, "-", "_")
	}
	if m := flagRe.FindStringSubmatch(msg); m != nil {
		first = name(m[1])
	}
	return flagRe.ReplaceAllStringFunc(msg, func(f string) string { return name(f[2:]) }), first
}

// Value reads and writes one Config field as text, the way the command
// line spells it. It is a flag.Value (and a boolean flag for a bool).
type Value struct{ p any }

// String formats the value as Set reads it.
func (v Value) String() string {
	switch p := v.p.(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		return strconv.FormatInt(*p, 10)
	case *float64:
		return strconv.FormatFloat(*p, 'g', -1, 64)
	case *bool:
		return strconv.FormatBool(*p)
	case *Duration:
		return p.String()
	case *[]string:
		return strings.Join(*p, ",")
	}
	panic(fmt.Sprintf("scenario.Value: unsupported field type %T", v.p))
}

// Set parses s into the field. A list is comma-separated.
func (v Value) Set(s string) error {
	switch p := v.p.(type) {
	case *string:
		*p = s
	case *int:
		i, err := strconv.Atoi(s)
		if err != nil {
			return errors.New("not a whole number")
		}
		*p = i
	case *int64:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return errors.New("not a whole number")
		}
		*p = i
	case *float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return errors.New("not a finite number")
		}
		*p = f
	case *bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("want true or false")
		}
		*p = b
	case *Duration:
		return p.Set(s)
	case *[]string:
		list, err := SplitList(s)
		if err != nil {
			return err
		}
		*p = list
	default:
		panic(fmt.Sprintf("scenario.Value: unsupported field type %T", v.p))
	}
	return nil
}

// SplitList splits a comma-separated list of names, trimmed; "" is the
// empty list. An empty item ("a,", "a,,b") is refused, not dropped: it is
// a typo, and running what is left would test less than was asked.
func SplitList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e == "" {
			return nil, errors.New("an empty item in the list: remove the extra comma")
		}
		out = append(out, e)
	}
	return out, nil
}

// IsBoolFlag lets a bool setting be given as a bare --flag.
func (v Value) IsBoolFlag() bool {
	_, ok := v.p.(*bool)
	return ok
}

// Command returns the command line that reproduces cfg, quoted for a
// POSIX shell: "locktest run" (or the user's binary, see Program),
// then every stored setting that differs from its default, and those
// marked Always.
func (cfg Config) Command() string {
	def := Defaults()
	words := []string{programName, "run"}
	for _, s := range Settings {
		if s.Name() == "" {
			continue
		}
		v := s.Value(&cfg).String()
		if v == s.Value(&def).String() && !s.Always {
			continue
		}
		switch {
		case !s.Value(&cfg).IsBoolFlag():
			words = append(words, "--"+s.Flag, ShellQuote(v))
		case v == "true":
			words = append(words, "--"+s.Flag)
		default:
			words = append(words, "--"+s.Flag+"="+v)
		}
	}
	return strings.Join(words, " ")
}

// Program is the name the running binary goes by, as the user typed it: a
// user's own main built on the cli package (docs/go-api.md), or locktest
// installed under another name, is not called locktest, and a command it
// suggests (a reproduce line, a capsule's replay, a usage line) must run.
// A user's main may register a design the stock locktest lacks, so its runs
// reproduce only with that binary. The go test binaries of this module
// stand for locktest.
func Program() string { return programName }

var programName = program(os.Args[0], ownTest())

// module is this module's path, as a binary's build information names it.
const module = "github.com/locktest/locktest"

// ownTest tells whether the running binary is a go test binary of this
// module, other than of an example (a user's main, named as such).
func ownTest() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && bi.Main.Path == module && strings.HasSuffix(bi.Path, ".test") && !strings.HasPrefix(bi.Path, module+"/examples/")
}

func program(arg0 string, ownTest bool) string {
	name := filepath.Base(arg0)
	if ownTest || name == "." || name == string(filepath.Separator) {
		return "locktest"
	}
	return name
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// ShellQuote quotes s as one POSIX shell word, unless it is one already.
func ShellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Placeholder names the flag's value in the help (--ttl DURATION); it is
// empty for a bool, which takes none.
func (s Setting) Placeholder() string {
	if s.Arg != "" {
		return s.Arg
	}
	switch s.Ptr(&Config{}).(type) {
	case *bool:
		return ""
	case *string:
		return "NAME"
	case *int, *int64:
		return "N"
	case *float64:
		return "X"
	case *Duration:
		return "DURATION"
	}
	return "VALUE"
}
