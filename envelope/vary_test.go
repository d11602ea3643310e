package envelope

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

func TestChooseVary(t *testing.T) {
	plain := impls.Design{Name: "plain"}
	delayed := impls.Design{Name: "delayed", LockDelay: 1}
	tests := []struct {
		fault  string
		d      impls.Design
		asked  faults.Vary
		want   faults.Vary
		errHas string
	}{
		{"pause-holder", plain, "", faults.VaryPause, ""},
		{"pause-holder", delayed, "", faults.VaryLockDelay, ""},
		{"pause-holder", delayed, faults.VaryPause, faults.VaryPause, ""},
		{"pause-node", delayed, "", faults.VaryPause, ""},
		{"slow-resource-write", plain, "", faults.VaryDelay, ""},
		{"clock-bump", plain, "", faults.VaryClock, ""},
		{"client-clock-skew", plain, faults.VaryRate, faults.VaryRate, ""},
		{"pause-holder", plain, faults.VaryLockDelay, "", "has none"},
		{"pause-holder", plain, faults.VaryRate, "", "does not apply"},
		{"pause-holder", plain, "speed", "", "unknown --vary"},
		{"partition", plain, "", "", "no single magnitude"},
		// A pair, and a name no fault has, are no one fault to sweep.
		{"latency+pause-holder", plain, "", "", "no single magnitude"},
		{"bogus", plain, "", "", "no single magnitude"},
	}
	for _, tt := range tests {
		got, err := ChooseVary(tt.fault, tt.d, tt.asked)
		switch {
		case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("%s %s %q: error %v, want one saying %q", tt.fault, tt.d.Name, tt.asked, err, tt.errHas)
		case tt.errHas == "" && (err != nil || got != tt.want):
			t.Errorf("%s %s %q: got %q, %v; want %q", tt.fault, tt.d.Name, tt.asked, got, err, tt.want)
		}
	}
}

// Every point's run must be a fair try: the fault's size in the knob the
// fault reads, a critical section under the lease (no loss without the
// fault), waits that outlast the fault, and a run long enough for a whole
// strike.
func TestPlanConfigIsFair(t *testing.T) {
	base := scenario.Defaults()
	ttl := time.Duration(base.TTL)
	d := impls.Design{Name: "delayed", LockDelay: 1}
	for _, fault := range SweepableFaults() {
		f, _ := faults.Lookup(fault)
		for _, v := range f.Traits().Size.Sweeps {
			p := NewPlan(fault, v, d)
			for _, m := range []float64{p.Lo, (p.Lo + p.Hi) / 2, p.Hi} {
				c := p.Config(base, m, 7)
				want := time.Duration(m * float64(ttl)).Round(time.Millisecond)
				var got time.Duration
				switch {
				case v == faults.VaryRate:
					if c.ClockRate != m {
						t.Errorf("%s %s %g: clock rate %g", fault, v, m, c.ClockRate)
					}
					got = want
				default:
					got = faults.SizeOf(c, f)
				}
				if got != want {
					t.Errorf("%s %s %g: magnitude set to %s, want %s", fault, v, m, got, want)
				}
				if c.HoldMax >= c.TTL || c.HoldMin > c.HoldMax {
					t.Errorf("%s %s %g: hold %s–%s is not under the TTL", fault, v, m, c.HoldMin, c.HoldMax)
				}
				if v == faults.VaryDelay && c.IOTimeout <= scenario.Duration(want) {
					t.Errorf("%s %s %g: I/O timeout %s does not outlast the delay", fault, v, m, c.IOTimeout)
				}
				if c.AcquireTimeout <= c.FaultDuration {
					t.Errorf("%s %s %g: acquire timeout %s shorter than the fault %s", fault, v, m, c.AcquireTimeout, c.FaultDuration)
				}
				if c.Duration < c.FaultInterval+c.FaultDuration+c.HoldMax || c.Duration < p.MinDuration {
					t.Errorf("%s %s %g: run of %s cannot hold a whole strike", fault, v, m, c.Duration)
				}
				if c.Seed != 7 || !slices.Equal(c.Faults, []string{fault}) || c.FaultMoment != f.Traits().Size.Moment {
					t.Errorf("%s %s %g: seed %d, faults %v, moment %q", fault, v, m, c.Seed, c.Faults, c.FaultMoment)
				}
				r, err := runner.Resolve(c)
				if err == nil && v == faults.VaryRate && r.ClockDelta > scenario.Duration(time.Millisecond) {
					t.Errorf("%s rate: resolved clock offset %s: the rate is not alone", fault, r.ClockDelta)
				}
			}
		}
	}
}

func TestLabel(t *testing.T) {
	p := NewPlan("pause-holder", faults.VaryPause, impls.Design{})
	r := NewPlan("client-clock-skew", faults.VaryRate, impls.Design{})
	for _, tt := range []struct{ got, want string }{
		{p.Label(1.1875), "1.188×TTL"}, {p.Label(4), "4×TTL"}, {p.Label(0.25), "0.25×TTL"}, {r.Label(1.5), "rate 1.5"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
