package seed

import "math/rand/v2"

// Domain names what a stream is for.
type Domain uint32

// The domains of a run. Values are part of the reproducibility contract:
// changing one changes every run's choices in that domain.
const (
	// Faults: fault i's schedule and target choices (index: its place in --fault).
	Faults Domain = iota + 1
	// Workloads: client i's keys and hold times.
	Workloads
	// Locks: client i's lock (retry sleeps, owner ids).
	Locks
	// Explore: explore's choice of scenarios (index: the trial).
	Explore
)

// Stream returns the random stream of (domain, index) for a run's seed.
// The domain fills the high half of PCG's second word and the index the
// low half, so distinct pairs give distinct states for every index below
// 2³².
func Stream(seed int64, d Domain, index int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(d)<<32|uint64(uint32(index))))
}
