package reports

import "github.com/locktest/locktest/checker"

// Outcome is a verdict in the words of the people choosing a design: did
// the design keep its promise under this fault? These are the words of
// every report, of suite files' expectations and of their results; the
// checker's own verdicts (valid, invalid, unknown) are translated here only.
type Outcome string

const (
	Safe   Outcome = "safe"
	Unsafe Outcome = "unsafe"
	// Undecided: the checker ran out of time, or nothing was checked.
	Undecided Outcome = "unknown"
	// AnyOutcome as an expectation accepts safe and unsafe alike, for
	// designs whose behaviour under a fault is not a promise either way
	// (Redis with WAIT). An undecided check still fails it: nothing was
	// learned.
	AnyOutcome Outcome = "any"
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
