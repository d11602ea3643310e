package explore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// Knobs is one point of the search space. Lengths are ratios to the TTL:
// what decides whether an anomaly can show is how a pause, a delay or a
// critical section compares with the lease, not its absolute length.
type Knobs struct {
	Fault  string `json:"fault"`
	Target string `json:"target,omitempty"` // "" is the fault's default
	// Fault2, when set, strikes together with Fault as a pair (--fault
	// Fault+Fault2), aimed at Target2 and FaultLen2 TTLs long.
	Fault2    string  `json:"fault2,omitempty"`
	Target2   string  `json:"target2,omitempty"`
	FaultLen2 float64 `json:"fault_len2_ttl,omitempty"`
	Moment    string  `json:"moment"`
	// Checkpoint is where a fault that strikes at a checkpoint
	// (faults.Traits.AtCheckpoint) stops a client: one the design lists.
	Checkpoint string `json:"checkpoint,omitempty"`
	// FaultLen is the fault's size in TTLs: a pause's or a restart's
	// length, a request's delay, a clock jump.
	FaultLen float64 `json:"fault_len_ttl"`
	// Hold is the shortest critical section in TTLs; HoldSpread makes the
	// longest Hold×(1+HoldSpread).
	Hold       float64 `json:"hold_ttl"`
	HoldSpread float64 `json:"hold_spread"`
	// IOLong gives each request a timeout longer than the fault, so a
	// delayed request lands late instead of timing out.
	IOLong  bool `json:"io_long"`
	Clients int  `json:"clients"`
	Keys    int  `json:"keys"`
	// Fencing is what the resource checks tokens on (Config.Fencing): ""
	// keeps the base's, when the search has no choice (fencingsOf).
	Fencing string `json:"fencing,omitempty"`
}

// Ranges of the search, in TTLs where lengths. They are stated in the
// coverage report, so a "nothing found" says what was not tried.
var (
	faultLenRange = [2]float64{0.01, 4}
	holdRange     = [2]float64{0.1, 2}
	clientRange   = [2]int{2, 8}
	keyRange      = [2]int{1, 4}
)

// pairShare is the share of fresh draws that pair the fault with another
// that can strike together with it (faults.LookupItem): anomalies that
// need two faults at once (a late reply during a pause inside acquire)
// are out of reach of any single fault, and a pair costs a trial as one
// fault does. The coverage report states it.
const pairShare = 0.25

// momentWeights favour the moments inside a holder's critical section,
// where most anomalies need their fault, without starving the others.
var momentWeights = map[string]int{
	faults.MomentAny: 1, faults.MomentGrant: 3, faults.MomentExpiry: 2,
	faults.MomentAcquire: 1, faults.MomentRelease: 1,
}

// logUniform draws from [lo, hi] evenly in log scale: a pause of 0.1 TTL
// and one of 1 TTL are as far apart as 1 and 10.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

func pickMoment(r *rand.Rand) string {
	total := 0
	for _, m := range faults.Moments {
		total += momentWeights[m]
	}
	n := r.IntN(total)
	for _, m := range faults.Moments {
		if n -= momentWeights[m]; n < 0 {
			return m
		}
	}
	return faults.MomentAny
}

// targetsOf lists the targets worth trying for fault f in a design with
// the given server roles: the holder first (a pause that misses the
// holder shows nothing), then node sets and roles. "" is the default.
func targetsOf(f faults.Fault, roles []string) []string {
	accepts := f.Traits().Targets
	out := []string{""}
	if accepts&faults.HolderTarget != 0 {
		out = append(out, "holder", "holder")
	}
	if accepts&faults.NodeTargets != 0 && accepts&faults.LinkTargets == 0 {
		out = append(out, "node", "majority", "all")
		for _, r := range roles {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// pickCheckpoint draws one of the design's checkpoints for a fault that
// strikes at one, so that a search tries each; "" for any other fault,
// which draws nothing.
func pickCheckpoint(r *rand.Rand, f faults.Fault, checkpoints []string) string {
	if !f.Traits().AtCheckpoint || len(checkpoints) == 0 {
		return ""
	}
	return checkpoints[r.IntN(len(checkpoints))]
}

// fencingsOf lists the resource fencings a search tries: each of them when
// the workload's data is on the resource node and the design may take
// tokens to it (a fenced design, or a program whose tokens are not known
// before it runs), since a lock whose tokens come out of order loses
// updates only where reads are not fenced (workloads.FenceWrites); none
// otherwise, where the setting changes nothing.
func fencingsOf(d impls.Design, workload string) []string {
	w, err := workloads.Lookup(workload)
	if err != nil || !w.NeedsResource || d.GuardsWrites || (!d.Fenced && d.Name != impls.ExecName) {
		return nil
	}
	return workloads.FencingModes
}

// pickFencing draws one of fencings; "" (the base's) when there is no
// choice.
func pickFencing(r *rand.Rand, fencings []string) string {
	if len(fencings) < 2 {
		return ""
	}
	return fencings[r.IntN(len(fencings))]
}

// fresh draws a new point for fault f, paired with g unless g is nil, in
// a design with the given server roles and checkpoints; holds stay below
// holdHi TTLs.
func fresh(r *rand.Rand, f, g faults.Fault, roles, checkpoints []string, holdHi float64) Knobs {
	k := Knobs{Fault: f.Name(), Moment: pickMoment(r), HoldSpread: 0.3 * r.Float64(), IOLong: r.IntN(2) == 0,
		Clients: clientRange[0] + r.IntN(clientRange[1]-clientRange[0]+1), Keys: 1}
	ts := targetsOf(f, roles)
	k.Target = ts[r.IntN(len(ts))]
	k.FaultLen = drawLen(r)
	k.Hold = logUniform(r, holdRange[0], holdHi)
	if r.IntN(5) < 2 {
		k.Keys = keyRange[0] + 1 + r.IntN(keyRange[1]-keyRange[0])
	}
	k.Checkpoint = pickCheckpoint(r, f, checkpoints)
	if g != nil {
		ts := targetsOf(g, roles)
		k.Fault2, k.Target2, k.FaultLen2 = g.Name(), ts[r.IntN(len(ts))], drawLen(r)
		if k.Checkpoint == "" {
			k.Checkpoint = pickCheckpoint(r, g, checkpoints)
		}
	}
	return k
}

// drawLen draws a fault's length in TTLs. Most faults need to outlast the
// lease; a quarter of the draws go below it, where restarts and short
// delays do their harm.
func drawLen(r *rand.Rand) float64 {
	if r.IntN(4) == 0 {
		return logUniform(r, faultLenRange[0], 0.5)
	}
	return logUniform(r, 0.5, faultLenRange[1])
}

// partners lists, for each fault, the faults among fs it can strike
// together with in a pair (faults.LookupItem), in fs's order.
func partners(fs []faults.Fault) map[faults.Fault][]faults.Fault {
	out := map[faults.Fault][]faults.Fault{}
	for _, f := range fs {
		for _, g := range fs {
			if _, err := faults.LookupItem(f.Name() + faults.PairJoin + g.Name()); err == nil {
				out[f] = append(out[f], g)
			}
		}
	}
	return out
}

// item is the point's item of the fault list: its fault, or its pair.
func (k Knobs) item() string {
	if k.Fault2 == "" {
		return k.Fault
	}
	return k.Fault + faults.PairJoin + k.Fault2
}

// maxHoldUnderLease is the longest critical section, in TTLs, of a search
// for violations inside the lease: half of it, so the fault has the rest.
const maxHoldUnderLease = 0.5

// underLease shrinks a point so that its fault and its longest critical
// section together fit inside the lease: what a correct lease lock must
// survive, so that a violation there is the lock's own.
func (k Knobs) underLease() Knobs {
	k.Hold = min(k.Hold, maxHoldUnderLease)
	room := 0.95 - k.Hold*(1+k.HoldSpread)
	k.FaultLen = max(faultLenRange[0], min(k.FaultLen, room))
	if k.Fault2 != "" { // a pair's faults strike together: each must fit
		k.FaultLen2 = max(faultLenRange[0], min(k.FaultLen2, room))
	}
	return k
}

// mutate perturbs a point that did well: lengths by up to about ×1.5 either
// way, and now and then another moment, target, client count or
// checkpoint. A pair stays the same pair.
func mutate(r *rand.Rand, k Knobs, f faults.Fault, roles, checkpoints []string, holdHi float64) Knobs {
	scale := func(v, lo, hi float64) float64 {
		return min(hi, max(lo, v*math.Exp(0.4*r.NormFloat64())))
	}
	k.FaultLen = scale(k.FaultLen, faultLenRange[0], faultLenRange[1])
	if g, err := faults.Lookup(k.Fault2); k.Fault2 != "" && err == nil {
		k.FaultLen2 = scale(k.FaultLen2, faultLenRange[0], faultLenRange[1])
		if r.IntN(4) == 0 {
			ts := targetsOf(g, roles)
			k.Target2 = ts[r.IntN(len(ts))]
		}
	}
	k.Hold = scale(k.Hold, holdRange[0], holdHi)
	if r.IntN(3) == 0 {
		k.Moment = pickMoment(r)
	}
	if r.IntN(4) == 0 {
		ts := targetsOf(f, roles)
		k.Target = ts[r.IntN(len(ts))]
	}
	if r.IntN(5) == 0 {
		k.IOLong = !k.IOLong
	}
	if r.IntN(3) == 0 {
		k.Clients = min(clientRange[1], max(clientRange[0], k.Clients+r.IntN(3)-1))
	}
	if len(checkpoints) > 1 && f.Traits().AtCheckpoint && r.IntN(3) == 0 {
		k.Checkpoint = pickCheckpoint(r, f, checkpoints)
	}
	return k
}

// Config turns a point into a run configuration on top of base (the
// design, workload, TTL and anything the user set). The run lasts long
// enough for about three strikes, between 8 and 20 seconds.
func (k Knobs) Config(base scenario.Config, seed int64) scenario.Config {
	c := base
	ttl := time.Duration(c.TTL)
	ratio := func(x float64) scenario.Duration {
		return scenario.Duration(time.Duration(x * float64(ttl)).Round(time.Millisecond))
	}
	c.Faults = []string{k.item()}
	c.FaultTarget = k.Target
	if k.Fault2 != "" {
		c.FaultTarget = pairTargets(k)
	}
	c.FaultMoment = k.Moment
	c.Checkpoint = k.Checkpoint
	setLen := func(name string, x float64) {
		if f, err := faults.Lookup(name); err == nil {
			faults.SetSize(&c, f, time.Duration(max(ratio(x), scenario.Duration(10*time.Millisecond))))
		}
	}
	setLen(k.Fault, k.FaultLen)
	longest := c.FaultDuration
	if k.Fault2 != "" {
		setLen(k.Fault2, k.FaultLen2)
		longest = max(longest, c.FaultDuration2)
	}
	c.HoldMin = ratio(k.Hold)
	c.HoldMax = ratio(k.Hold * (1 + k.HoldSpread))
	if k.IOLong {
		c.IOTimeout = longest + scenario.Duration(ttl)
	}
	c.AcquireTimeout = max(c.AcquireTimeout, longest+scenario.Duration(2*ttl))
	c.Clients, c.Keys, c.Seed = k.Clients, k.Keys, seed
	if k.Fencing != "" {
		c.Fencing = k.Fencing
	}
	// Quiet time between strikes: at least a TTL and at least a strike, so
	// the lock recovers between them.
	c.FaultInterval = max(scenario.Duration(ttl), longest)
	cycle := time.Duration(longest+c.HoldMax) + 2*ttl
	c.Duration = scenario.Duration(min(20*time.Second, max(8*time.Second, 3*cycle)).Round(time.Second))
	return c
}

// pairTargets is --fault-target of a pair point: each fault's own, by
// name, those at their default left out.
func pairTargets(k Knobs) string {
	var ts []string
	for _, ft := range [][2]string{{k.Fault, k.Target}, {k.Fault2, k.Target2}} {
		if ft[1] != "" {
			ts = append(ts, ft[0]+"="+ft[1])
		}
	}
	return strings.Join(ts, ",")
}

// String is the point in one line, for progress and reports.
func (k Knobs) String() string {
	t := k.Target
	if t == "" {
		t = "default"
	}
	length := fmt.Sprintf("%.2f", k.FaultLen)
	if k.Fault2 != "" {
		t2 := k.Target2
		if t2 == "" {
			t2 = "default"
		}
		t += "/" + t2
		length += fmt.Sprintf("/%.2f", k.FaultLen2)
	}
	io := "short"
	if k.IOLong {
		io = "long"
	}
	at := ""
	if k.Checkpoint != "" {
		at = fmt.Sprintf(" checkpoint=%q", k.Checkpoint)
	}
	fencing := ""
	if k.Fencing != "" {
		fencing = " fencing=" + k.Fencing
	}
	return fmt.Sprintf("%s target=%s moment=%s%s len=%s×TTL hold=%.2f×TTL io=%s clients=%d keys=%d%s",
		k.item(), t, k.Moment, at, length, k.Hold, io, k.Clients, k.Keys, fencing)
}
