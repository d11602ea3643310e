package clock

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Mono reads the clock every process on the host reads: it lies between
// two clock_gettime(CLOCK_MONOTONIC) system calls around it.
func TestMonoIsClockMonotonic(t *testing.T) {
	sys := func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return ts.Nano()
	}
	for range 1000 {
		before := sys()
		m := Mono()
		after := sys()
		if m < before || m > after {
			t.Fatalf("Mono %d outside CLOCK_MONOTONIC's %d..%d", m, before, after)
		}
	}
}
