// Package envelope measures how big a fault a lock design survives: for one
// design and one fault it finds, by bisection, the magnitude (a pause, a
// delay, a clock jump as a multiple of the TTL, or a clock rate) at which
// the protected data first loses an update.
//
// A single run says whether one fault of one size broke the lock; the
// envelope says where the edge is, so that "Redlock survives pauses" reads
// as "survives pauses up to 0.9×TTL". Each point of the sweep is judged on
// several seeds, with every strike placed at a lock moment that lets the
// magnitude matter (faults.Moments), so that a safe point means the fault
// was given its chance. The runs are ordinary runs in the store; the sweep
// writes its curve (fraction of seeds that lost an update, by magnitude)
// as JSON, PNG and SVG next to them.
//
// The package does not know which designs should be safe: the boundary
// comes from the runs' verdicts alone.
package envelope
