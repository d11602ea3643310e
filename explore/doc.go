// Package explore looks for an anomaly in one lock design without being
// told where to look, and says how hard it looked when it finds none.
//
// A run only shows an anomaly when a fault lands inside a narrow window
// with the right magnitude: a pause longer than the lease while the client
// holds the lock, a delay longer than the lease but shorter than the I/O
// timeout, a critical section longer than a failover. Explore searches
// those knobs as ratios to the TTL (so the search means the same for any
// lease), aligns each strike to a lock moment (faults.Moments), and steers
// toward the settings whose strikes took effect (checker fault efficacy).
// Some draws pair two faults that strike together (faults.Pair), for the
// anomalies no single fault reaches.
// At the first violation it stops, shrinks the scenario while it still
// fails in most seeds, and writes a capsule: the command line, a suite
// entry and the failing run. When the budget runs out it reports its
// coverage instead: no violation found under this coverage, never "safe".
//
// Nothing here knows which designs are expected to be unsafe: the search
// reads only the registry (which faults apply, which targets they take)
// and what the runs themselves recorded.
package explore
