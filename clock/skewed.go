package clock

import (
	"sync"
	"time"
)

// Skewed is a wall clock the coordinator can offset or make run fast or
// slow while a worker runs (the client-clock-skew fault). Zero offset and
// rate 1 read the host's clock.
type Skewed struct {
	mu     sync.Mutex
	offset time.Duration
	rate   float64
	anchor time.Time // host time when the rate last changed
}

// NewSkewed returns a clock that reads true time until Set is called.
func NewSkewed() *Skewed { return &Skewed{rate: 1} }

// Set makes the clock read host time + offset, advancing rate seconds per
// host second from now on.
func (s *Skewed) Set(offset time.Duration, rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset, s.rate, s.anchor = offset, rate, time.Now()
}

// Now returns the skewed time.
func (s *Skewed) Now() time.Time {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rate == 1 {
		return now.Add(s.offset)
	}
	drift := time.Duration(float64(now.Sub(s.anchor)) * (s.rate - 1))
	return now.Add(s.offset + drift)
}
