package envelope

import (
	"errors"
	"math"
)

// State is what a point's seeds say about a magnitude.
type State string

// The states of a point: safe when no seed lost an update and every seed
// was a fair try, unsafe when one did, unknown otherwise.
const (
	Safe    State = "safe"
	Unsafe  State = "unsafe"
	Unknown State = "unknown"
)

// Finding is what a search concluded.
type Finding string

const (
	// FoundBoundary: safe at Outcome.Safe and unsafe at Outcome.Unsafe.
	FoundBoundary Finding = "boundary"
	// FoundNone: safe even at the top of the bracket.
	FoundNone Finding = "none"
	// FoundBelow: unsafe already at the bottom of the bracket.
	FoundBelow Finding = "below"
	// FoundUnknown: a point could not be judged, so the search stopped.
	FoundUnknown Finding = "unknown"
)

// Search bisects [Lo, Hi] for the smallest magnitude at which a design
// loses an update. It assumes a bigger fault does no less harm, which is
// what makes one bracket enough: a point is never measured twice.
type Search struct {
	Lo, Hi float64
	// Tol is the bracket width at which the boundary is known well
	// enough: 0.1 TTL is ±5% of the lease.
	Tol float64
	// MaxPoints bounds the number of points judged, both ends included.
	MaxPoints int
}

// Outcome is the result of a search. Safe is the largest magnitude judged
// safe below the smallest judged unsafe (nil when none was), Unsafe that
// smallest unsafe one (nil when none was).
type Outcome struct {
	Finding Finding  `json:"finding"`
	Safe    *float64 `json:"safe,omitempty"`
	Unsafe  *float64 `json:"unsafe,omitempty"`
	// Converged: the bracket is within Tol (always for none and below,
	// which need no bracket).
	Converged bool `json:"converged"`
	Points    int  `json:"points"`
}

// Run judges the ends of the bracket, then bisects it until it is within
// Tol or MaxPoints were judged. judge is called once per magnitude, in
// order; a search stops at the first point it cannot judge.
func (s Search) Run(judge func(magnitude float64) State) (Outcome, error) {
	if !(s.Lo < s.Hi) || s.Tol <= 0 || s.MaxPoints < 2 {
		return Outcome{}, errors.New("envelope: a search needs lo < hi, a positive tolerance and at least 2 points")
	}
	var o Outcome
	at := func(m float64) State {
		o.Points++
		return judge(m)
	}
	lo, hi := s.Lo, s.Hi
	switch at(lo) {
	case Unsafe:
		o.Finding, o.Unsafe, o.Converged = FoundBelow, &lo, true
		return o, nil
	case Unknown:
		o.Finding = FoundUnknown
		return o, nil
	}
	o.Safe = &lo
	switch at(hi) {
	case Safe:
		o.Finding, o.Safe, o.Converged = FoundNone, &hi, true
		return o, nil
	case Unknown:
		o.Finding = FoundUnknown
		return o, nil
	}
	o.Unsafe = &hi
	o.Finding = FoundBoundary
	for hi-lo > s.Tol*(1+1e-9) && o.Points < s.MaxPoints {
		// Three decimals: a millisecond of a one-second lease.
		mid := math.Round((lo+hi)/2*1000) / 1000
		switch at(mid) {
		case Safe:
			lo = mid
		case Unsafe:
			hi = mid
		default:
			o.Finding = FoundUnknown
			o.Safe, o.Unsafe = &lo, &hi
			return o, nil
		}
	}
	o.Safe, o.Unsafe = &lo, &hi
	o.Converged = hi-lo <= s.Tol*(1+1e-9)
	return o, nil
}
