package runner

import (
	"context"
	"slices"
	"time"

	"github.com/locktest/locktest/history"
)

// lagPeriod is how often the coordinator checks it wakes on time during a
// run; short enough to catch a saturated machine, cheap enough to cost
// nothing.
const lagPeriod = 50 * time.Millisecond

// watchLag wakes every lagPeriod until ctx ends and measures how late each
// wake-up came. The returned function waits for the watcher to end (call
// it after ctx is done) and sums it up.
func watchLag(ctx context.Context) func() *history.Lag {
	done := make(chan []time.Duration, 1)
	go func() {
		var lates []time.Duration
		t := time.NewTimer(lagPeriod)
		defer t.Stop()
		for {
			want := time.Now().Add(lagPeriod)
			t.Reset(lagPeriod)
			select {
			case <-ctx.Done():
				done <- lates
				return
			case <-t.C:
				lates = append(lates, max(0, time.Since(want)))
			}
		}
	}()
	return func() *history.Lag {
		lates := <-done
		slices.Sort(lates)
		lag := &history.Lag{Ticks: len(lates)}
		if len(lates) > 0 {
			lag.P99 = int64(lates[(len(lates)*99+99)/100-1])
			lag.Max = int64(lates[len(lates)-1])
		}
		return lag
	}
}
