package explore

import (
	"github.com/locktest/locktest/reports"
)

// Effect says what one strike of a fault did to the lock.
type Effect string

// The effects, from the checker's fault efficacy.
const (
	EffectTook      Effect = "effective"
	EffectDisturbed Effect = "disturbed"
	EffectNone      Effect = "no effect"
)

// Strike is one occurrence of a fault in a trial.
type Strike struct {
	Moment string `json:"moment,omitempty"`
	Target string `json:"target"`
	Effect Effect `json:"effect"`
	Reason string `json:"reason,omitempty"`
}

// strikesOf reads a run's strikes and their effects from its results.
func strikesOf(res reports.Results) []Strike {
	var out []Strike
	for _, f := range res.Checks.Faults {
		out = append(out, Strike{Moment: f.Moment, Target: f.Target})
	}
	return out
}
