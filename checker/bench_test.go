package checker

import (
	"fmt"
	"testing"

	"github.com/locktest/locktest/history/historytest"
)

// BenchmarkCheck times both checks of a valid synthetic counter history of
// 8 clients, cut into segments (as Check does) and whole (each key in one
// piece, as before the cuts), side by side. The whole check of one key
// grows quadratically in time and memory: at 1M ops it needs some 80 GB, so
// it is timed at 100k ops only.
//
//	go test -run '^$' -bench Check -benchmem ./checker
func BenchmarkCheck(b *testing.B) {
	for _, tc := range []struct {
		ops, keys int
		whole     bool
	}{
		{1_000_000, 64, false}, {1_000_000, 64, true},
		{1_000_000, 1, false},
		{100_000, 1, false}, {100_000, 1, true},
	} {
		how := "cut"
		if tc.whole {
			how = "whole"
		}
		b.Run(fmt.Sprintf("ops=%d/keys=%d/%s", tc.ops, tc.keys, how), func(b *testing.B) {
			recs := historytest.Counter{Clients: 8, Keys: tc.keys, Ops: tc.ops, Seed: 1}.Records()
			b.ResetTimer()
			for range b.N {
				rep := Check(recs, Options{Whole: tc.whole})
				if rep.Mutex.Verdict != Valid || rep.Resource.Verdict != Valid {
					b.Fatalf("mutex %s, resource %s: want both valid", rep.Mutex.Verdict, rep.Resource.Verdict)
				}
			}
		})
	}
}
