package runner

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The counted lateness gives the percentile the sorted list of every
// wake-up gives, to within lagGrain above it, and the max exactly.
func TestLatenessMatchesSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name  string
		draws int
		late  func() time.Duration
	}{
		{"none", 0, nil},
		{"one", 1, func() time.Duration { return 3 * time.Millisecond }},
		{"on time", 1000, func() time.Duration { return 0 }},
		{"mostly small", 72_000, func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(200*time.Microsecond)) }},
		{"a busy machine", 5000, func() time.Duration { return time.Duration(rng.Int64N(int64(40 * time.Millisecond))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l lateness
			var all []time.Duration
			for range tc.draws {
				d := tc.late()
				l.add(d)
				all = append(all, d)
			}
			got := l.lag()
			slices.Sort(all)
			if got.Ticks != len(all) {
				t.Fatalf("ticks %d, want %d", got.Ticks, len(all))
			}
			if len(all) == 0 {
				if got.P99 != 0 || got.Max != 0 {
					t.Fatalf("no wake-ups: %+v", got)
				}
				return
			}
			p99, maxLate := all[(len(all)*99+99)/100-1], all[len(all)-1]
			if got.Max != int64(maxLate) || got.P99 < int64(p99) || got.P99 >= int64(p99+lagGrain) || got.P99 > got.Max {
				t.Fatalf("p99 %v max %v; want p99 %v (to %v) and max %v", time.Duration(got.P99), time.Duration(got.Max), p99, lagGrain, maxLate)
			}
		})
	}
}
