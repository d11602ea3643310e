package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

// Mono returns CLOCK_MONOTONIC in nanoseconds. Every process on the host
// reads the same clock, so stamps from different workers are comparable.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC cannot fail on Linux; falling back keeps the
		// signature simple without hiding a real problem elsewhere.
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// Since returns the time elapsed since a Mono stamp.
func Since(stamp int64) time.Duration { return time.Duration(Mono() - stamp) }

// Clock is the wall clock a lock client reads, e.g. to judge how long its
// lease is still valid. A fault can skew a worker's Clock without touching
// the host's.
type Clock interface {
	Now() time.Time
}

// System is the host's wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }
