package reports

import "github.com/locktest/locktest/checker"

// Outcome is a verdict in the words of the people choosing a design: did
// the design keep its promise under this fault?
type Outcome string

const (
	Safe   Outcome = "safe"
	Unsafe Outcome = "unsafe"
	// Undecided: the checker ran out of time, or nothing was checked.
	Undecided Outcome = "unknown"
)

// OutcomeOf translates a checker verdict.
func OutcomeOf(v checker.Verdict) Outcome {
	switch v {
	case checker.Valid:
		return Safe
	case checker.Invalid:
		return Unsafe
	default:
		return Undecided
	}
}
