package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

func TestParse(t *testing.T) {
	src := `name: tiny
defaults:
  duration: 5s
  clients: 3
scenarios:
  - name: a
    anomaly: [1, 20]
    impl: redis-single
    faults: pause-holder
    seeds: [4, 5]
    ttl: 500ms
    expect: unsafe
  - name: b
    impl: redis-single-fenced
    workload: mutex
    faults: [none]
    duration: 3s
    expect: {verdict: safe, mutex: safe, max_recovery: 2s}
`
	f, err := Parse("tiny.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "tiny" || len(f.Scenarios) != 2 {
		t.Fatalf("got %+v", f)
	}
	a, b := f.Scenarios[0], f.Scenarios[1]
	if len(a.Runs) != 2 || a.Runs[1].Seed != 5 || a.Runs[0].Clients != 3 || time.Duration(a.Runs[0].TTL) != 500*time.Millisecond ||
		time.Duration(a.Runs[0].Duration) != 5*time.Second || a.Runs[0].Scenario != "a" || a.Expect.Verdict != reports.Unsafe ||
		strings.Join(a.Anomalies, ",") != "1,20" || a.Line != 6 {
		t.Errorf("scenario a: %+v %+v", a, a.Runs[0].Config)
	}
	if b.Runs[0].Workload.Name != "mutex" || time.Duration(b.Runs[0].Duration) != 3*time.Second ||
		b.Expect != (Expect{Verdict: reports.Safe, Mutex: reports.Safe, MaxRecovery: 2 * time.Second}) || b.Runs[0].Seed != 1 {
		t.Errorf("scenario b: %+v %+v", b, b.Runs[0].Config)
	}
}

// TestFaultDurations: a scenario or cell without its own duration runs
// for its fault's (the longest of its faults'), over the defaults and the
// matrix's; one that gives its own keeps it, and one that must find a
// violation keeps the defaults' (a limit when it stops at it).
func TestFaultDurations(t *testing.T) {
	src := `defaults: {duration: 10s}
fault_durations: {pause-holder: 4s, kill-node: 7s}
matrix: {designs: [redis-single], faults: [none, pause-holder, kill-node], expect: any, duration: 9s}
scenarios:
  - {name: both, impl: redis-single, faults: [pause-holder, kill-node], expect: any}
  - {name: own, impl: redis-single, faults: pause-holder, duration: 2s, expect: any}
  - {name: redis-single-kill-node, impl: redis-single, faults: kill-node, expect: any}
  - {name: stops, impl: redis-single, faults: pause-holder, stop_early: true, expect: unsafe}
  - {name: stops-mutex, impl: redis-single, faults: pause-holder, stop_early: true, expect: {mutex: unsafe}}
  - {name: stops-any, impl: redis-single, faults: pause-holder, stop_early: true, expect: any}
  - {name: to-the-end, impl: redis-single, faults: pause-holder, stop_early: true, expect: {verdict: unsafe, max_recovery: 2s}}
  - {name: fenced, impl: redis-single-fenced, faults: pause-holder, expect: {verdict: safe, mutex: unsafe}}
  - {name: safe, impl: redis-single-fenced, faults: pause-holder, expect: {verdict: safe, max_recovery: 2s}}
`
	f, err := Parse("d.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"both": 7 * time.Second, "own": 2 * time.Second, "redis-single-kill-node": 7 * time.Second,
		"redis-single-none": 9 * time.Second, "redis-single-pause-holder": 4 * time.Second,
		"stops": 10 * time.Second, "stops-mutex": 10 * time.Second, "stops-any": 4 * time.Second, "to-the-end": 10 * time.Second,
		"fenced": 10 * time.Second, "safe": 4 * time.Second,
	}
	for _, sc := range f.Scenarios {
		if got := time.Duration(sc.Runs[0].Duration); got != want[sc.Name] {
			t.Errorf("%s: duration %v, want %v", sc.Name, got, want[sc.Name])
		}
		delete(want, sc.Name)
	}
	if len(want) > 0 {
		t.Errorf("scenarios missing: %v", want)
	}
}

// TestParseErrors: every mistake names the file, the line and the field.
func TestParseErrors(t *testing.T) {
	scenario := func(lines ...string) string {
		return "scenarios:\n  - name: x\n" + "    " + strings.Join(lines, "\n    ") + "\n"
	}
	cases := []struct {
		name, src, want string
	}{
		{"bad yaml", "name: a\n\tscenarios: []\n", "s.yaml:2: not valid YAML: found a tab character"},
		{"bad indentation", "name: a\n scenarios: []\n", "s.yaml:2: not valid YAML: mapping values are not allowed"},
		{"empty", "", "s.yaml: empty suite"},
		{"not a mapping", "- a\n", "s.yaml:1: want a mapping"},
		{"unknown top field", "scenario: []\n", "s.yaml:1: scenario: unknown field (valid: name, defaults, fault_durations, matrix, scenarios, envelopes)"},
		{"no scenarios", "name: x\n", "s.yaml:1: scenarios: missing"},
		{"fault_durations not a mapping", "fault_durations: 5s\n" + scenario("impl: redis-single", "expect: safe"), "s.yaml:1: fault_durations: want a mapping of fault names to durations"},
		{"fault_durations unknown fault", "fault_durations: {gremlins: 5s}\n" + scenario("impl: redis-single", "expect: safe"), `s.yaml:1: fault_durations.gremlins: unknown fault "gremlins"`},
		{"fault_durations bad duration", "fault_durations:\n  none: soon\n" + scenario("impl: redis-single", "expect: safe"), "s.yaml:2: fault_durations.none: want a positive duration"},
		{"fault_durations zero", "fault_durations:\n  none: 0s\n" + scenario("impl: redis-single", "expect: safe"), "s.yaml:2: fault_durations.none: want a positive duration"},
		{"empty scenarios", "scenarios: []\n", "s.yaml:1: scenarios: want a non-empty list"},
		{"unknown field", scenario("impl: redis-single", "fualts: none", "expect: safe"), "s.yaml:4: scenarios[0].fualts: unknown field (valid: "},
		{"duplicate field", scenario("impl: redis-single", "impl: redis-single", "expect: safe"), "s.yaml:4: scenarios[0].impl: given twice (first on line 3)"},
		{"unknown impl", scenario("impl: zookeeper-9", "expect: safe"), `s.yaml:3: scenarios[0].impl: unknown impl "zookeeper-9" (valid: [`},
		{"missing impl", scenario("expect: safe"), "s.yaml:2: scenarios[0].impl: missing (valid: "},
		{"unknown workload", scenario("impl: redis-single", "workload: dance", "expect: safe"), `s.yaml:4: scenarios[0].workload: unknown workload "dance" (valid: [`},
		{"unknown fault", scenario("impl: redis-single", "faults: [none, gremlins]", "expect: safe"), `s.yaml:4: scenarios[0].faults: unknown fault "gremlins" (valid: `},
		{"trailing comma", scenario("impl: redis-single", "faults: pause-holder,", "expect: safe"), "s.yaml:4: scenarios[0].faults: an empty item in the list: remove the extra comma"},
		{"no fault", scenario("impl: redis-single", "faults: []", "expect: safe"), "s.yaml:4: scenarios[0].faults: give at least one fault, or none"},
		{"bad duration", scenario("impl: redis-single", "duration: fifteen", "expect: safe"), "s.yaml:4: scenarios[0].duration: want a duration such as 10s"},
		{"bad clients", scenario("impl: redis-single", "clients: many", "expect: safe"), `s.yaml:4: scenarios[0].clients: want a whole number, got "many"`},
		{"resolve error", scenario("impl: redis-single", "clients: 0", "expect: safe"), "s.yaml:4: scenarios[0].clients: clients 0: must be between 1 and 64"},
		{"resolve error from defaults", "defaults:\n  hold_min: 1s\nscenarios:\n  - name: x\n    impl: redis-single\n    expect: safe\n", "s.yaml:2: defaults.hold_min: hold_min must be ≥ 0 and ≤ hold_max"},
		{"missing expect", scenario("impl: redis-single"), "s.yaml:2: scenarios[0].expect: missing: give safe, unsafe"},
		{"bad expect", scenario("impl: redis-single", "expect: maybe"), "s.yaml:4: scenarios[0].expect: want safe, unsafe or any"},
		{"bad expect field", scenario("impl: redis-single", "expect: {verdict: safe, recovery: 2s}"), "s.yaml:4: scenarios[0].expect.recovery: unknown field (valid: verdict, mutex, max_recovery, never_recovers, clients_may_hang, any_seed)"},
		{"bad recovery", scenario("impl: redis-single", "expect: {max_recovery: soon}"), "s.yaml:4: scenarios[0].expect.max_recovery: want a positive duration"},
		{"contradiction", scenario("impl: redis-single", "expect: {max_recovery: 2s, never_recovers: true}"), "s.yaml:4: scenarios[0].expect: max_recovery and never_recovers contradict"},
		{"hang allowance alone", scenario("impl: redis-single", "expect: {clients_may_hang: true}"), "s.yaml:4: scenarios[0].expect: clients_may_hang qualifies a verdict: give verdict too"},
		{"bad seeds", scenario("impl: redis-single", "seeds: 3", "expect: safe"), "s.yaml:4: scenarios[0].seeds: want a non-empty list of seeds"},
		{"duplicate seed", scenario("impl: redis-single", "seeds: [1, 1]", "expect: safe"), "s.yaml:4: scenarios[0].seeds: seed 1 given twice"},
		{"bad name", "scenarios:\n  - name: a/b\n    impl: redis-single\n    expect: safe\n", `s.yaml:2: scenarios[0].name: name "a/b": want up to 200 letters`},
		{"name escapes the store", "scenarios:\n  - name: ../x\n    impl: redis-single\n    expect: safe\n", `s.yaml:2: scenarios[0].name: name "../x": want`},
		{"missing name", "scenarios:\n  - impl: redis-single\n    expect: safe\n", "s.yaml:2: scenarios[0].name: missing"},
		{"duplicate name", "scenarios:\n  - {name: a, impl: redis-single, expect: safe}\n  - {name: a, impl: redis-single, expect: safe}\n", `s.yaml:3: scenarios[1].name: "a" is taken by the scenario on line 2`},
		{"name in defaults", "defaults:\n  name: a\nscenarios: []\n", "s.yaml:2: defaults.name: unknown field"},
		{"seed instead of seeds", scenario("impl: redis-single", "seed: 3", "expect: safe"), "s.yaml:4: scenarios[0].seed: unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.src))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *suite.Error", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got  %s\nwant %s…", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

// picky is a fault that applies to fenced designs only: the suite must
// refuse it for others before anything starts.
type picky struct{}

func (picky) Name() string        { return "test-picky" }
func (picky) Description() string { return "test fault" }
func (picky) Traits() faults.Traits {
	return faults.Traits{Aim: history.AimLock, Servers: faults.ServersUntouched}
}
func (picky) Applies(d impls.Design, _ faults.Workload) error {
	if !d.Fenced {
		return errors.New("it needs fencing tokens")
	}
	return nil
}
func (picky) Run(ctx context.Context, _ *faults.Env) error { <-ctx.Done(); return nil }

func init() { faults.Register(picky{}) }

func TestParseInapplicableFault(t *testing.T) {
	src := "scenarios:\n  - name: ok\n    impl: redis-single-fenced\n    faults: test-picky\n    expect: safe\n" +
		"  - name: refused\n    impl: redis-single\n    faults: [none, test-picky]\n    expect: safe\n"
	_, err := Parse("s.yaml", []byte(src))
	want := "s.yaml:8: scenarios[1].faults: fault test-picky does not apply to impl redis-single: it needs fencing tokens"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

// TestParseEverySetting: a scenario takes every named setting of
// scenario.Settings (but seed, scenario and stop_on_violation, which seeds,
// name and stop_early give), each under its own name and landing in its
// own field.
func TestParseEverySetting(t *testing.T) {
	values := map[string]string{
		"impl": "exec", "exec_cmd": "true --fenced", "exec_servers": "redis-single", "exec_name": "mylock", "workload": "counter",
		"faults": "pause-holder+latency,pause-at", "clients": "3", "keys": "2", "duration": "4s", "ttl": "700ms",
		"acquire_timeout": "3s", "io_timeout": "300ms", "retry_min": "10ms", "retry_jitter": "15ms",
		"hold_min": "5ms", "hold_max": "90ms", "fault_interval": "2s", "fault_duration": "900ms", "fault_duration2": "400ms",
		"fault_target": "pause-holder=holder", "fault_moment": "grant", "latency": "80ms", "jitter": "20ms", "clock_delta": "-500ms",
		"clock_rate": "1.5", "persist": "true", "fencing": "writes", "backend": "local", "keep_data": "true", "check_timeout": "20s",
		"servers": "127.0.0.1:7000", "server_pids": "4242", "exec_checkpoints": "after-set,before-del", "checkpoint": "before-del",
		"server_keepalive": "7s", "server_user_timeout": "2.5s", "server_idle_timeout": "1m0s", "server_io_timeout": "9s",
		"network": "proxy", "loss": "0.2", "eviction": "allkeys-lru",
		"nodes": "h1", "ssh_user": "root", "ssh_key": "/k", "ssh_known_hosts": "/kh", "ssh_dir": "/tmp/locktest",
	}
	// The servers' timeouts and eviction are refused beside servers the
	// user runs, and no one design's servers take them all: each is a
	// scenario of its own, on a design that takes it; so is nodes, which
	// takes no backend, with the ssh settings beside it.
	apart := map[string]string{"server_keepalive": "postgres-advisory", "server_user_timeout": "postgres-advisory",
		"server_idle_timeout": "mariadb-getlock", "server_io_timeout": "mariadb-getlock", "eviction": "redis-single"}
	var set []scenario.Setting
	src := "scenarios:\n  - name: every\n    expect: any\n"
	var rest, ssh string // ssh: nodes and the ssh settings
	for _, s := range scenario.Settings {
		if name := s.Name(); name != "" && name != "seed" && name != "scenario" && name != "stop_on_violation" {
			if _, ok := values[name]; !ok {
				t.Fatalf("setting %s has no value here: add one", name)
			}
			if impl, ok := apart[name]; ok {
				rest += "  - name: " + name + "\n    impl: " + impl + "\n    expect: any\n    " + name + ": " + values[name] + "\n"
			} else if name == "nodes" || strings.HasPrefix(name, "ssh_") {
				ssh += "    " + name + ": " + values[name] + "\n"
			} else {
				src += "    " + name + ": " + values[name] + "\n"
			}
			set = append(set, s)
		}
	}
	src += rest + "  - name: nodes\n    impl: redis-single\n    expect: any\n" + ssh
	if len(set) != len(values) {
		t.Fatalf("%d values for %d settings: drop those that are no settings", len(values), len(set))
	}
	f, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	for _, s := range set {
		got := f.Scenarios[0].Runs[0].Config
		for _, sc := range f.Scenarios {
			if sc.Name == s.Name() || sc.Name == "nodes" && strings.HasPrefix(s.Name(), "ssh_") {
				got = sc.Runs[0].Config
			}
		}
		if v := s.Value(&got).String(); v != values[s.Name()] {
			t.Errorf("%s: %s gave %s", s.Name(), values[s.Name()], v)
		}
	}
}

// TestStopEarly: stop_early ends a run at the violations that settle its
// expectation, and not at all when the run's end still decides it (a
// check that must stay safe, a recovery bound); stop_on_violation itself
// is no suite field.
func TestStopEarly(t *testing.T) {
	cases := []struct {
		workload, expect string
		want             []string
	}{
		{"counter", "unsafe", []string{"resource"}},
		{"counter", "any", []string{"resource"}},
		{"counter", "{verdict: unsafe, mutex: unsafe}", []string{"resource", "mutex"}},
		{"counter", "{mutex: unsafe}", []string{"mutex"}},
		{"mutex", "{verdict: unsafe, mutex: unsafe}", []string{"mutex"}},
		{"counter", "safe", nil},
		{"counter", "{verdict: safe, mutex: unsafe}", nil},
		{"counter", "{verdict: unsafe, max_recovery: 2s}", nil},
	}
	for _, tc := range cases {
		src := fmt.Sprintf("defaults: {stop_early: true}\nscenarios:\n  - {name: a, impl: redis-single, faults: pause-holder, workload: %s, expect: %s}\n",
			tc.workload, tc.expect)
		f, err := Parse("s.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", tc.expect, err)
		}
		if got := f.Scenarios[0].Runs[0].StopOnViolation; !slices.Equal(got, tc.want) {
			t.Errorf("%s, expect %s: stops on %v, want %v", tc.workload, tc.expect, got, tc.want)
		}
	}
	_, err := Parse("s.yaml", []byte("scenarios:\n  - {name: a, impl: redis-single, stop_on_violation: mutex, expect: unsafe}\n"))
	if err == nil || !strings.Contains(err.Error(), "stop_on_violation: unknown field") {
		t.Errorf("stop_on_violation as a suite field: %v, want refused", err)
	}
}
