package envelope

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/runner"
)

// Vary names the magnitude a sweep turns.
type Vary string

// The magnitudes. All but rate are multiples of the TTL.
const (
	// VaryPause is the fault's length (FaultDuration): how long a process
	// or server stays stopped.
	VaryPause Vary = "pause"
	// VaryDelay is how long a request is held: FaultDuration for
	// slow-resource-write, Latency for latency.
	VaryDelay Vary = "delay"
	// VaryClock is how far a clock jumps forward (ClockDelta).
	VaryClock Vary = "clock"
	// VaryRate is how fast a skewed client clock runs (ClockRate, 1 is
	// true speed); it is a rate, not a multiple of the TTL.
	VaryRate Vary = "rate"
	// VaryLockDelay is the holder's pause swept against a design with a
	// lock-delay (impls.Design.LockDelay): the pause must outlive the
	// lease and the delay both.
	VaryLockDelay Vary = "lockdelay"
)

// Varies lists the magnitudes, in the order the help gives them.
var Varies = []Vary{VaryPause, VaryDelay, VaryClock, VaryRate, VaryLockDelay}

// sweepable says how a fault is swept: the magnitudes it has (the first is
// its default), and where its strikes go. Every strike waits for a lock
// moment so that it lands where its size decides the outcome: "grant" is
// just after a client entered its critical section (counter: read, not yet
// written), and a "holder" target then hits that very client.
type sweepable struct {
	varies []Vary
	// target overrides the fault's default target ("" keeps it; the plan
	// names it).
	target string
	moment string
}

// sweeps are the faults an envelope can sweep. Faults missing here have no
// single magnitude (a failover, a partition of a split Redlock).
var sweeps = map[string]sweepable{
	"pause-holder": {varies: []Vary{VaryPause, VaryLockDelay}, moment: faults.MomentGrant},
	// pause-client hits a random client by default, usually a waiter: aim
	// it at the grant's holder so that every strike can matter.
	"pause-client": {varies: []Vary{VaryPause, VaryLockDelay}, target: "holder", moment: faults.MomentGrant},
	"pause-node":   {varies: []Vary{VaryPause}, moment: faults.MomentGrant},
	// These two stop a client at a checkpoint inside acquire, which places
	// the strike by itself: a lock moment on top would only delay it.
	"pause-waiter":        {varies: []Vary{VaryPause}, moment: faults.MomentAny},
	"pause-acquire":       {varies: []Vary{VaryPause}, moment: faults.MomentAny},
	"slow-resource-write": {varies: []Vary{VaryDelay}, moment: faults.MomentGrant},
	"latency":             {varies: []Vary{VaryDelay}, moment: faults.MomentGrant},
	"clock-bump":          {varies: []Vary{VaryClock}, moment: faults.MomentGrant},
	// The Redlock split waits for the holder to hold its three reachable
	// nodes before it jumps one clock: it places the strike by itself.
	"redlock-clock-jump": {varies: []Vary{VaryClock}, moment: faults.MomentAny},
	"clock-strobe":       {varies: []Vary{VaryClock}, moment: faults.MomentGrant},
	"client-clock-skew":  {varies: []Vary{VaryClock, VaryRate}, moment: faults.MomentGrant},
}

// SweepableFaults lists the faults an envelope can sweep, sorted.
func SweepableFaults() []string {
	var out []string
	for f := range sweeps {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// ChooseVary checks that fault can be swept by v against design d and
// returns the magnitude to sweep: v, or when v is empty the fault's
// default (lockdelay for a holder pause of a design with a lock-delay).
func ChooseVary(fault string, d impls.Design, v Vary) (Vary, error) {
	s, ok := sweeps[fault]
	if !ok {
		return "", fmt.Errorf("fault %s has no single magnitude to sweep (sweepable: %s)", fault, strings.Join(SweepableFaults(), ", "))
	}
	if v == "" {
		v = s.varies[0]
		if d.LockDelay > 0 && slices.Contains(s.varies, VaryLockDelay) {
			v = VaryLockDelay
		}
	}
	if !slices.Contains(Varies, v) {
		return "", fmt.Errorf("unknown --vary %q (valid: %s)", v, joinVaries(Varies))
	}
	if !slices.Contains(s.varies, v) {
		return "", fmt.Errorf("--vary %s does not apply to fault %s (it takes %s)", v, fault, joinVaries(s.varies))
	}
	if v == VaryLockDelay && d.LockDelay <= 0 {
		return "", fmt.Errorf("--vary lockdelay needs a design with a lock-delay, and %s has none (use --vary pause)", d.Name)
	}
	return v, nil
}

func joinVaries(vs []Vary) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// Plan is how one sweep runs its points: the bracket, the critical
// section, and how a magnitude becomes a run's settings.
type Plan struct {
	Fault string `json:"fault"`
	Vary  Vary   `json:"vary"`
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
	MinDuration runner.Duration `json:"min_duration"`
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
func NewPlan(fault string, v Vary, d impls.Design) Plan {
	s := sweeps[fault]
	if f, err := faults.Lookup(fault); err == nil && s.target == "" {
		if tf, ok := f.(faults.Targeted); ok {
			_, s.target = tf.Targets()
		}
	}
	if v == VaryClock && (fault == "clock-bump" || fault == "clock-strobe") {
		// A server's clock decides a lease only where the lock lives: jump
		// every server that holds it (the primary of a replicated design,
		// each node of Redlock), not one drawn at random among replicas
		// and Sentinels, which would make a safe point no try at all.
		s.target = cluster.RoleLock
		if slices.Contains(d.Roles, cluster.RolePrimary) {
			s.target = cluster.RolePrimary
		}
	}
	p := Plan{Fault: fault, Vary: v, Unit: "TTL", Lo: 0.25, Hi: 4, Tol: 0.1, Target: s.target, Moment: s.moment,
		LockDelay: d.LockDelay, MinDuration: runner.Duration(6 * time.Second)}
	switch v {
	case VaryPause, VaryLockDelay:
		p.Knob, p.HoldMin, p.HoldMax = "fault duration (the pause)", 0.2, 0.25
		p.Why = "strike just after the grant; the write follows the pause, so only the pause's length decides"
	case VaryDelay:
		p.Knob, p.HoldMin, p.HoldMax = "delay of each request", 0.05, 0.1
		if fault == "slow-resource-write" {
			p.Knob = "fault duration (the write's delay)"
		}
		p.Why = "write sent just after the grant and waited for (I/O timeout > delay): only the delay decides"
	case VaryClock, VaryRate:
		p.Knob, p.HoldMin, p.HoldMax = "clock delta (forward)", 0.5, 0.55
		if v == VaryRate {
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
func (p Plan) Config(base runner.Config, m float64, seed int64) runner.Config {
	c := base
	ttl := time.Duration(c.TTL)
	ttls := func(x float64) runner.Duration {
		return runner.Duration(time.Duration(x * float64(ttl)).Round(time.Millisecond))
	}
	c.Faults, c.FaultTarget, c.FaultMoment, c.Seed = []string{p.Fault}, p.Target, p.Moment, seed
	c.FaultInterval = ttls(1)
	c.HoldMin, c.HoldMax = ttls(p.HoldMin), ttls(p.HoldMax)
	if p.Vary == VaryDelay {
		c.HoldMin = max(c.HoldMin, runner.Duration(30*time.Millisecond))
		c.HoldMax = max(c.HoldMax, c.HoldMin)
	}
	// tail is how long the fault keeps the lock from others after it ends.
	tail := ttls(1 + p.LockDelay)
	switch p.Vary {
	case VaryPause, VaryLockDelay:
		c.FaultDuration = ttls(m)
	case VaryDelay:
		if p.Fault == "latency" {
			c.Latency, c.Jitter = ttls(m), 0
			c.FaultDuration = ttls(m + 2)
		} else {
			c.FaultDuration = ttls(m)
		}
		c.IOTimeout = ttls(m + 1)
		tail = ttls(2) // slow-resource-write keeps the delay a TTL past its duration
	case VaryClock:
		c.ClockDelta, c.FaultDuration = ttls(m), ttls(2)
	case VaryRate:
		// Resolve reads a zero delta as its default (+2×TTL): 1 ms is no
		// offset to a lease, and leaves the rate alone to act.
		c.ClockDelta, c.ClockRate, c.FaultDuration = runner.Duration(time.Millisecond), m, ttls(2)
	}
	c.FaultDuration = max(c.FaultDuration, runner.Duration(10*time.Millisecond))
	// A waiter must still be waiting when the lock frees up.
	c.AcquireTimeout = max(c.AcquireTimeout, c.FaultDuration+tail+ttls(1))
	// Long enough for a whole strike: the quiet time (up to 1.5 intervals),
	// the fault, the hold and the lock's aftermath.
	cycle := time.Duration(c.FaultInterval*3/2+c.FaultDuration+c.HoldMax+tail) + 2*ttl
	c.Duration = max(p.MinDuration, runner.Duration(cycle.Round(time.Second)))
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
	case VaryPause, VaryDelay:
		return []Reference{{1, "lease (TTL)"}}
	case VaryLockDelay:
		return []Reference{{1, "lease (TTL)"}, {1 + p.LockDelay, "TTL + lock-delay"}}
	case VaryClock:
		return []Reference{{1 - p.HoldMin, "TTL − hold"}}
	}
	return nil
}
