package explore

import (
	"slices"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
)

// FaultCoverage is how hard the search looked with one fault, or one pair
// of faults striking together: what it tried and where its strikes
// landed. It is the answer to "nothing found".
type FaultCoverage struct {
	// Fault is the fault, or the pair (a+b).
	Fault    string                  `json:"fault"`
	Trials   int                     `json:"trials"`
	Verdicts map[checker.Verdict]int `json:"verdicts"`
	Strikes  int                     `json:"strikes"`
	// Moments counts strikes and those that took effect per lock moment.
	Moments map[string]*MomentCount `json:"moments"`
	// Ranges tried, lengths in TTLs.
	FaultLen [2]float64 `json:"fault_len_ttl"`
	// FaultLen2 is a pair's second fault's.
	FaultLen2 *[2]float64 `json:"fault_len2_ttl,omitempty"`
	Hold      [2]float64  `json:"hold_ttl"`
	Clients   [2]int      `json:"clients"`
	Keys      [2]int      `json:"keys"`
	Targets   []string    `json:"targets"`
	IOLong    int         `json:"io_long_trials"`
	// Fencing counts trials per resource fencing the search drew (none
	// when it had no choice to make: fencingsOf).
	Fencing map[string]int `json:"fencing_trials,omitempty"`
}

// MomentCount is the strikes at one lock moment.
type MomentCount struct {
	Strikes   int `json:"strikes"`
	Effective int `json:"effective"`
	Disturbed int `json:"disturbed"`
}

// coverage is the coverage of each fault searched, then of each pair
// tried, in name order.
func coverage(trials []Trial, fs []faults.Fault) []FaultCoverage {
	var items, pairs []string
	for _, f := range fs {
		items = append(items, f.Name())
	}
	for _, t := range trials {
		if it := t.Knobs.item(); t.Knobs.Fault2 != "" && !slices.Contains(pairs, it) {
			pairs = append(pairs, it)
		}
	}
	slices.Sort(pairs)
	var out []FaultCoverage
	for _, item := range append(items, pairs...) {
		c := FaultCoverage{Fault: item, Verdicts: map[checker.Verdict]int{}, Moments: map[string]*MomentCount{}}
		for _, t := range trials {
			k := t.Knobs
			if k.item() != item {
				continue
			}
			if c.Trials == 0 {
				c.FaultLen, c.Hold = [2]float64{k.FaultLen, k.FaultLen}, [2]float64{k.Hold, k.Hold}
				c.Clients, c.Keys = [2]int{k.Clients, k.Clients}, [2]int{k.Keys, k.Keys}
				if k.Fault2 != "" {
					c.FaultLen2 = &[2]float64{k.FaultLen2, k.FaultLen2}
				}
			}
			if c.FaultLen2 != nil {
				c.FaultLen2 = &[2]float64{min(c.FaultLen2[0], k.FaultLen2), max(c.FaultLen2[1], k.FaultLen2)}
			}
			c.Trials++
			c.Verdicts[t.Result]++
			c.FaultLen = [2]float64{min(c.FaultLen[0], k.FaultLen), max(c.FaultLen[1], k.FaultLen)}
			c.Hold = [2]float64{min(c.Hold[0], k.Hold), max(c.Hold[1], k.Hold)}
			c.Clients = [2]int{min(c.Clients[0], k.Clients), max(c.Clients[1], k.Clients)}
			c.Keys = [2]int{min(c.Keys[0], k.Keys), max(c.Keys[1], k.Keys)}
			target := k.Target
			if target == "" {
				target = "default"
			}
			if k.Fault2 != "" {
				t2 := k.Target2
				if t2 == "" {
					t2 = "default"
				}
				target += "/" + t2
			}
			if !slices.Contains(c.Targets, target) {
				c.Targets = append(c.Targets, target)
			}
			if k.IOLong {
				c.IOLong++
			}
			if k.Fencing != "" {
				if c.Fencing == nil {
					c.Fencing = map[string]int{}
				}
				c.Fencing[k.Fencing]++
			}
			for _, s := range t.Strikes {
				m := s.Moment
				if m == "" {
					m = faults.MomentAny
				}
				mc := c.Moments[m]
				if mc == nil {
					mc = &MomentCount{}
					c.Moments[m] = mc
				}
				mc.Strikes++
				c.Strikes++
				switch s.Effect {
				case checker.Effective:
					mc.Effective++
				case checker.Disturbed:
					mc.Disturbed++
				}
			}
		}
		slices.Sort(c.Targets)
		out = append(out, c)
	}
	return out
}
