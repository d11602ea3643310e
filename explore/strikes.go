package explore

import (
	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/reports"
)

// Strike is one occurrence of a fault in a trial: the lock moment it was
// aligned to and what it did to the lock (checker fault efficacy).
type Strike struct {
	Moment string             `json:"moment,omitempty"`
	Target string             `json:"target"`
	Effect checker.EffectKind `json:"effect"`
	Reason string             `json:"reason,omitempty"`
}

// strikesOf reads a run's strikes from its results: Efficacy holds one
// entry per entry of Faults, in the same order.
func strikesOf(res reports.Results) []Strike {
	var out []Strike
	for i, f := range res.Checks.Faults {
		s := Strike{Moment: f.Moment, Target: f.Target}
		if i < len(res.Checks.Efficacy) {
			s.Effect, s.Reason = res.Checks.Efficacy[i].Kind, res.Checks.Efficacy[i].Reason
		}
		out = append(out, s)
	}
	return out
}
