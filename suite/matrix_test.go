package suite

import (
	"context"
	"errors"
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

// collider is a fault whose cells' names collide with others':
// redis-single × fenced-none and redis-single-fenced × none are both
// redis-single-fenced-none. It applies to the mutex workload only, so the
// shipped suites (counter) never meet it.
type collider struct{}

func (collider) Name() string        { return "fenced-none" }
func (collider) Description() string { return "test fault" }
func (collider) Traits() faults.Traits {
	return faults.Traits{Aim: history.AimLock, Servers: faults.ServersUntouched}
}
func (collider) Applies(_ impls.Design, w faults.Workload) error {
	if w.Resource {
		return errors.New("test fault for a workload without a resource")
	}
	return nil
}
func (collider) Run(ctx context.Context, _ *faults.Env) error { <-ctx.Done(); return nil }

func init() { faults.Register(collider{}) }

// TestMatrixAll: designs: all and faults: all make a cell of every design
// but exec with every fault that applies to it, named <impl>-<fault>, with
// the defaults, the matrix's settings and its expectation.
func TestMatrixAll(t *testing.T) {
	src := `defaults:
  duration: 5s
  clients: 3
matrix:
  designs: all
  faults: all
  duration: 4s
  network: netns
  expect: any
`
	f, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var want []Cell
	for _, d := range impls.All() {
		for _, fault := range faults.All() {
			if d.Name != impls.ExecName && fault.Applies(d, counter) == nil {
				want = append(want, Cell{d.Name, fault.Name()})
			}
		}
	}
	if !slices.Equal(f.Matrix, want) {
		t.Fatalf("cells:\n got %v\nwant %v", f.Matrix, want)
	}
	// On the proxy, a fault only the kernel makes has no cell.
	proxied, err := Parse("s.yaml", []byte(strings.Replace(src, "  network: netns\n", "  network: proxy\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range proxied.Matrix {
		if f, _ := faults.Lookup(c.Fault); f.Traits().Net == faults.NetKernel {
			t.Errorf("a matrix on the proxy has the cell %v", c)
		}
	}
	if len(proxied.Matrix) >= len(want) {
		t.Errorf("a matrix on the proxy has %d cells, as many as in netns", len(proxied.Matrix))
	}
	if len(f.Scenarios) != len(want) {
		t.Fatalf("%d scenarios for %d cells", len(f.Scenarios), len(want))
	}
	for i, sc := range f.Scenarios {
		r := sc.Runs[0]
		if sc.Name != want[i].Name() || r.Impl != want[i].Design || !slices.Equal(r.Config.Faults, []string{want[i].Fault}) ||
			!sc.Unmeasured || sc.Expect != (Expect{Verdict: reports.AnyOutcome}) || r.Clients != 3 || time.Duration(r.Duration) != 4*time.Second ||
			sc.Line != 5 {
			t.Errorf("cell %v: scenario %s (line %d, unmeasured %v, expect %v) runs %s %v clients %d for %s",
				want[i], sc.Name, sc.Line, sc.Unmeasured, sc.Expect, r.Impl, r.Config.Faults, r.Clients, time.Duration(r.Duration))
		}
	}
	// Applies decides: the test fault only fenced designs take.
	if !slices.Contains(f.Matrix, Cell{"redis-single-fenced", "test-picky"}) || slices.Contains(f.Matrix, Cell{"redis-single", "test-picky"}) {
		t.Errorf("test-picky cells ignore Applies: %v", f.Matrix)
	}
}

// TestMatrixOverrides: a scenario with a cell's name, impl and single fault
// replaces the cell; one of another name runs beside it.
func TestMatrixOverrides(t *testing.T) {
	src := `defaults:
  duration: 5s
matrix:
  designs: [redis-single, redis-single-fenced]
  faults: none, test-picky
  ttl: 2s
  expect: any
scenarios:
  - name: redis-single-fenced-none
    impl: redis-single-fenced
    faults: none
    expect: safe
  - name: redis-single-none-long
    impl: redis-single
    faults: none
    duration: 9s
    expect: {verdict: safe, mutex: safe}
`
	f, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells := []Cell{{"redis-single", "none"}, {"redis-single-fenced", "none"}, {"redis-single-fenced", "test-picky"}}
	if !slices.Equal(f.Matrix, cells) {
		t.Errorf("cells %v, want %v", f.Matrix, cells)
	}
	type got struct {
		name       string
		unmeasured bool
		expect     Expect
		ttl, dur   time.Duration
	}
	var gots []got
	for _, sc := range f.Scenarios {
		gots = append(gots, got{sc.Name, sc.Unmeasured, sc.Expect, time.Duration(sc.Runs[0].TTL), time.Duration(sc.Runs[0].Duration)})
	}
	// Explicit scenarios first, in file order: they take the defaults,
	// not the matrix's settings; then the cells nobody overrides.
	want := []got{
		{"redis-single-fenced-none", false, Expect{Verdict: reports.Safe}, time.Second, 5 * time.Second},
		{"redis-single-none-long", false, Expect{Verdict: reports.Safe, Mutex: reports.Safe}, time.Second, 9 * time.Second},
		{"redis-single-none", true, Expect{Verdict: reports.AnyOutcome}, 2 * time.Second, 5 * time.Second},
		{"redis-single-fenced-test-picky", true, Expect{Verdict: reports.AnyOutcome}, 2 * time.Second, 5 * time.Second},
	}
	if !slices.Equal(gots, want) {
		t.Errorf("scenarios:\n got %+v\nwant %+v", gots, want)
	}
}

// TestMatrixErrors: every mistake in a matrix names the file, the line and
// the field.
func TestMatrixErrors(t *testing.T) {
	matrix := func(lines ...string) string {
		return "matrix:\n  " + strings.Join(lines, "\n  ") + "\n"
	}
	cases := []struct {
		name, src, want string
	}{
		{"unknown design", matrix("designs: [redis-single, zookeeper-9]", "faults: all", "expect: any"),
			`s.yaml:2: matrix.designs: unknown impl "zookeeper-9" (valid: [`},
		{"unknown design in a line", matrix("designs: redis-single, zookeeper-9", "faults: all", "expect: any"),
			`s.yaml:2: matrix.designs: unknown impl "zookeeper-9" (valid: [`},
		{"unknown fault", matrix("designs: all", "faults:", "  - none", "  - gremlins", "expect: any"),
			`s.yaml:5: matrix.faults: unknown fault "gremlins" (valid: [`},
		{"design twice", matrix("designs: [etcd, etcd]", "faults: all", "expect: any"),
			"s.yaml:2: matrix.designs: etcd given twice"},
		{"empty designs", matrix("designs: []", "faults: all", "expect: any"),
			"s.yaml:2: matrix.designs: want all, or a non-empty list of names"},
		{"missing designs", matrix("faults: all", "expect: any"), "s.yaml:1: matrix.designs: missing: give all"},
		{"missing faults", matrix("designs: all", "expect: any"), "s.yaml:1: matrix.faults: missing: give all"},
		{"missing expect", matrix("designs: all", "faults: all"), "s.yaml:1: matrix.expect: missing: give the expectation"},
		{"impl in the matrix", matrix("designs: all", "faults: all", "impl: etcd", "expect: any"),
			"s.yaml:4: matrix.impl: unknown field (valid: designs, faults, "},
		{"fault that applies to no design", matrix("designs: [redis-single]", "faults: [none, failover]", "expect: any"),
			"s.yaml:3: matrix.faults: fault failover applies to none of the matrix's designs"},
		{"pair one of whose faults applies to no design", matrix("designs: [redis-single]", "faults: [partition+pause-acquire]", "expect: any"),
			"s.yaml:3: matrix.faults: fault partition+pause-acquire applies to none of the matrix's designs"},
		{"pair that cannot strike together", matrix("designs: [redis-single]", "faults: [pause-holder+kill-holder]", "expect: any"),
			"s.yaml:3: matrix.faults: pause-holder+kill-holder: pause-holder and kill-holder both seize a client process"},
		{"bad setting", matrix("designs: all", "faults: all", "clients: many", "expect: any"),
			`s.yaml:4: matrix.clients: want a whole number, got "many"`},
		{"setting the runner refuses", matrix("designs: [etcd]", "faults: all", "clients: 0", "expect: any"),
			"s.yaml:4: matrix.clients: clients 0: must be between 1 and 64"},
		{"bad expect", matrix("designs: all", "faults: all", "expect: maybe"), "s.yaml:4: matrix.expect: want safe, unsafe or any"},
		{"scenario named as another cell", matrix("designs: [redis-single]", "faults: [none]", "expect: any") +
			"scenarios:\n  - {name: redis-single-none, impl: redis-single-fenced, faults: none, expect: safe}\n",
			`s.yaml:6: scenarios[0].name: "redis-single-none" is the name of the matrix cell redis-single × none: give impl redis-single and faults none to override it, or another name`},
		{"scenario of two faults named as a cell", matrix("designs: [redis-single]", "faults: [none]", "expect: any") +
			"scenarios:\n  - {name: redis-single-none, impl: redis-single, faults: [pause-holder, pause-node], expect: safe}\n",
			`s.yaml:6: scenarios[0].name: "redis-single-none" is the name of the matrix cell redis-single × none`},
		{"cells of the same name", matrix("designs: [redis-single, redis-single-fenced]", "faults: [none, fenced-none]", "workload: mutex", "expect: any"),
			`s.yaml:2: matrix: cells redis-single × fenced-none and redis-single-fenced × none would both be named "redis-single-fenced-none"`},
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

// TestMatrixPairs: a pair (a+b) is a fault of the matrix like any other:
// its cells run both faults together, where both apply.
func TestMatrixPairs(t *testing.T) {
	src := `matrix:
  designs: [redis-single, redlock]
  faults: [latency+pause-holder, partition+pause-acquire]
  fault_duration2: 1500ms
  expect: any
`
	f, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells := []Cell{{"redis-single", "latency+pause-holder"}, {"redlock", "latency+pause-holder"}, {"redlock", "partition+pause-acquire"}}
	if !slices.Equal(f.Matrix, cells) {
		t.Fatalf("cells %v, want %v", f.Matrix, cells)
	}
	for _, sc := range f.Scenarios {
		r := sc.Runs[0]
		if len(r.Faults) != 2 || r.FaultDuration2 != scenario.Duration(1500*time.Millisecond) {
			t.Errorf("%s: %d faults, second lasting %v: want the pair, its second 1.5s", sc.Name, len(r.Faults), r.FaultDuration2)
		}
	}
}
