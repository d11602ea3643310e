package runner

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/locktest/locktest/history"
)

// lagPeriod is how often the coordinator checks it wakes on time during a
// run; short enough to catch a saturated machine, cheap enough to cost
// nothing.
const lagPeriod = 50 * time.Millisecond

// lagGrain is the resolution of the lag's percentile: a night's wake-ups
// are counted by lateness in steps of it, not kept one by one.
const lagGrain = 100 * time.Microsecond

// lateness counts wake-ups by how late they came, rounded up to lagGrain,
// and keeps the latest exactly.
type lateness struct {
	counts map[time.Duration]int
	n      int
	max    time.Duration
}

func (l *lateness) add(d time.Duration) {
	if l.counts == nil {
		l.counts = map[time.Duration]int{}
	}
	l.counts[(d+lagGrain-1)/lagGrain*lagGrain]++
	l.n++
	l.max = max(l.max, d)
}

// lag sums the wake-ups up; the 99th percentile is exact to lagGrain.
func (l *lateness) lag() *history.Lag {
	lag := &history.Lag{Ticks: l.n, Max: int64(l.max)}
	rank := (l.n*99 + 99) / 100 // the 99th percentile's, from 1
	for _, d := range slices.Sorted(maps.Keys(l.counts)) {
		if rank -= l.counts[d]; rank <= 0 {
			lag.P99 = int64(min(d, l.max))
			break
		}
	}
	return lag
}

// watchLag wakes every lagPeriod until ctx ends and measures how late each
// wake-up came. The returned function waits for the watcher to end (call
// it after ctx is done) and sums it up.
func watchLag(ctx context.Context) func() *history.Lag {
	done := make(chan *lateness, 1)
	go func() {
		var lates lateness
		t := time.NewTimer(lagPeriod)
		defer t.Stop()
		for {
			want := time.Now().Add(lagPeriod)
			t.Reset(lagPeriod)
			select {
			case <-ctx.Done():
				done <- &lates
				return
			case <-t.C:
				lates.add(max(0, time.Since(want)))
			}
		}
	}()
	return func() *history.Lag { return (<-done).lag() }
}
