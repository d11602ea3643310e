package envelope

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

// SweepableFaults lists the faults an envelope can sweep (those with a
// single magnitude, faults.Size.Sweeps), sorted.
func SweepableFaults() []string {
	var out []string
	for _, f := range faults.All() {
		if len(f.Traits().Size.Sweeps) > 0 {
			out = append(out, f.Name())
		}
	}
	return out
}

// ChooseVary checks that fault can be swept by v against design d and
// returns the magnitude to sweep: v, or when v is empty the fault's
// default (lockdelay for a holder pause of a design with a lock-delay).
func ChooseVary(fault string, d impls.Design, v faults.Vary) (faults.Vary, error) {
	f, err := faults.Lookup(fault) // a pair is no one fault: refused here
	if err != nil || len(f.Traits().Size.Sweeps) == 0 {
		return "", fmt.Errorf("fault %s has no single magnitude to sweep (sweepable: %s)", fault, strings.Join(SweepableFaults(), ", "))
	}
	sweeps := f.Traits().Size.Sweeps
	if v == "" {
		v = sweeps[0]
		if d.LockDelay > 0 && slices.Contains(sweeps, faults.VaryLockDelay) {
			v = faults.VaryLockDelay
		}
	}
	if !slices.Contains(faults.Varies, v) {
		return "", fmt.Errorf("unknown --vary %q (valid: %s)", v, joinVaries(faults.Varies))
	}
	if !slices.Contains(sweeps, v) {
		return "", fmt.Errorf("--vary %s does not apply to fault %s (it takes %s)", v, fault, joinVaries(sweeps))
	}
	if v == faults.VaryLockDelay && d.LockDelay <= 0 {
		return "", fmt.Errorf("--vary lockdelay needs a design with a lock-delay, and %s has none (use --vary pause)", d.Name)
	}
	return v, nil
}

func joinVaries(vs []faults.Vary) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// Plan is how one sweep runs its points: the bracket, the critical
// section, and how a magnitude becomes a run's settings.
type Plan struct {
	Fault string      `json:"fault"`
	Vary  faults.Vary `json:"vary"`
	// Knob names the setting the magnitude sets, for people.
	Knob string `json:"knob"`
	// Unit is "TTL" when magnitudes are multiples of the TTL, else "rate".
	Unit   string  `json:"unit"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Tol    float64 `json:"tol"`
	Target string  `json:"target,omitempty"`
	Moment string  `json:"moment"`
	// HoldMin and HoldMax bound the critical section, in TTLs.
	HoldMin float64 `json:"hold_min_ttl"`
	HoldMax float64 `json:"hold_max_ttl"`
	// LockDelay is the design's, in TTLs.
	LockDelay float64 `json:"lock_delay_ttl,omitempty"`
	// Why says why these settings make each point a fair try.
	Why string `json:"why"`
	// MinDuration is the shortest run; longer faults get longer runs.
	MinDuration scenario.Duration `json:"min_duration"`
}

// NewPlan returns the plan of sweeping fault by v against design d.
//
// The critical section is chosen per magnitude so that the fault alone
// decides (both bounds under the lease, so a run without the fault loses
// nothing), and so that the boundary reads plainly:
//
//   - pause, lockdelay: the strike lands a few milliseconds after the
//     grant and the write comes after the pause, whatever the hold; the
//     hold (0.2–0.25 TTL) only has to outlast the strike's trip. The
//     boundary is then where the pause outlives the lease (and the
//     lock-delay).
//   - delay: the holder's write leaves after the hold and lands the delay
//     later, so the boundary is TTL − hold; the hold is kept short (0.05–0.1
//     TTL, at least 30 ms for the strike to be in place first) so that it
//     reads as "the delay outlives the lease". Requests wait out the delay
//     instead of timing out (I/O timeout = delay + TTL), as in Kleppmann's
//     delayed packet.
//   - clock, rate: a clock that runs ahead ends a lease early, which only
//     hurts while the holder has not written yet: the boundary is TTL −
//     hold. Half a lease (0.5–0.55 TTL) puts it mid-bracket where it can
//     be resolved; the skew lasts 2×TTL, long enough for a waiter to take
//     the lock on the skewed clock and read before the holder writes.
func NewPlan(fault string, v faults.Vary, d impls.Design) Plan {
	// NewPlan runs after ChooseVary, which found the fault.
	f, _ := faults.Lookup(fault)
	t := f.Traits()
	target := faults.SweepTarget(f, d.Roles)
	if target == "" {
		target = t.Target
	}
	p := Plan{Fault: fault, Vary: v, Unit: "TTL", Lo: 0.25, Hi: 4, Tol: 0.1, Target: target, Moment: t.Size.Moment,
		LockDelay: d.LockDelay, MinDuration: scenario.Duration(6 * time.Second)}
	switch v {
	case faults.VaryPause, faults.VaryLockDelay:
		p.Knob, p.HoldMin, p.HoldMax = "fault duration (the pause)", 0.2, 0.25
		p.Why = "strike just after the grant; the write follows the pause, so only the pause's length decides"
	case faults.VaryDelay:
		p.Knob, p.HoldMin, p.HoldMax = "delay of each request", 0.05, 0.1
		if faults.SizeSetting(f) == "fault-duration" {
			p.Knob = "fault duration (the write's delay)"
		}
		p.Why = "write sent just after the grant and waited for (I/O timeout > delay): only the delay decides"
	case faults.VaryClock, faults.VaryRate:
		p.Knob, p.HoldMin, p.HoldMax = "clock delta (forward)", 0.5, 0.55
		if v == faults.VaryRate {
			// Rates from true speed to four times it; 0.1 of a rate is as
			// fine as 0.1 TTL of a jump.
			p.Knob, p.Unit, p.Lo, p.Hi = "clock rate", "rate", 1, 4
		}
		p.Why = "clock skewed for 2×TTL from a grant; the holder writes half a lease in, so the boundary reads TTL − hold"
	}
	return p
}

// Config returns the run of magnitude m for seed on top of base (design,
// workload, TTL, clients, backend: what the user set).
func (p Plan) Config(base scenario.Config, m float64, seed int64) scenario.Config {
	c := base
	ttl := time.Duration(c.TTL)
	ttls := func(x float64) scenario.Duration {
		return scenario.Duration(time.Duration(x * float64(ttl)).Round(time.Millisecond))
	}
	c.Faults, c.FaultTarget, c.FaultMoment, c.Seed = []string{p.Fault}, p.Target, p.Moment, seed
	c.FaultInterval = ttls(1)
	c.HoldMin, c.HoldMax = ttls(p.HoldMin), ttls(p.HoldMax)
	if p.Vary == faults.VaryDelay {
		c.HoldMin = max(c.HoldMin, scenario.Duration(30*time.Millisecond))
		c.HoldMax = max(c.HoldMax, c.HoldMin)
	}
	// tail is how long the fault keeps the lock from others after it ends.
	tail := ttls(1 + p.LockDelay)
	// Plan's fault was found by ChooseVary.
	f, _ := faults.Lookup(p.Fault)
	switch p.Vary {
	case faults.VaryRate:
		// Resolve reads a zero delta as its default (+2×TTL): 1 ms is no
		// offset to a lease, and leaves the rate alone to act.
		c.ClockDelta, c.ClockRate, c.FaultDuration = scenario.Duration(time.Millisecond), m, ttls(2)
	default:
		faults.SetSize(&c, f, time.Duration(ttls(m)))
	}
	switch {
	case p.Vary == faults.VaryClock:
		// A clock skewed for 2×TTL from a grant (see NewPlan).
		c.FaultDuration = ttls(2)
	case p.Vary == faults.VaryDelay:
		// Exact delays, waited for rather than timed out; a delay that is
		// not the fault's length acts on every request while the fault
		// lasts, which must cover the hold and the delayed request.
		c.Jitter, c.IOTimeout = 0, ttls(m+1)
		if faults.SizeSetting(f) != "fault-duration" {
			c.FaultDuration = ttls(m + 2)
		}
		tail = ttls(2) // a delayed write lands up to a TTL after its fault ends
	}
	c.FaultDuration = max(c.FaultDuration, scenario.Duration(10*time.Millisecond))
	// A waiter must still be waiting when the lock frees up.
	c.AcquireTimeout = max(c.AcquireTimeout, c.FaultDuration+tail+ttls(1))
	// Long enough for a whole strike: the quiet time (up to 1.5 intervals),
	// the fault, the hold and the lock's aftermath.
	cycle := time.Duration(c.FaultInterval*3/2+c.FaultDuration+c.HoldMax+tail) + 2*ttl
	c.Duration = max(p.MinDuration, scenario.Duration(cycle.Round(time.Second)))
	return c
}

// Label formats magnitude m with its unit, as "1.19×TTL" or "rate 1.5".
func (p Plan) Label(m float64) string {
	if p.Unit == "rate" {
		return "rate " + trim(m)
	}
	return trim(m) + "×TTL"
}

// trim formats m with up to three decimals and no trailing zeros.
func trim(m float64) string {
	s := fmt.Sprintf("%.3f", math.Round(m*1000)/1000)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// Reference is a magnitude worth marking on the curve: where a simple
// reading of the design says the edge should be. It is drawn, not judged.
type Reference struct {
	At    float64 `json:"at"`
	Label string  `json:"label"`
}

// References are the plan's reference magnitudes.
func (p Plan) References() []Reference {
	switch p.Vary {
	case faults.VaryPause, faults.VaryDelay:
		return []Reference{{1, "lease (TTL)"}}
	case faults.VaryLockDelay:
		return []Reference{{1, "lease (TTL)"}, {1 + p.LockDelay, "TTL + lock-delay"}}
	case faults.VaryClock:
		return []Reference{{1 - p.HoldMin, "TTL − hold"}}
	}
	return nil
}
