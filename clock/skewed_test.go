package clock

import (
	"testing"
	"time"
)

func TestSkewed(t *testing.T) {
	cases := []struct {
		name   string
		offset time.Duration
		rate   float64
		wait   time.Duration
	}{
		{"true time", 0, 1, 0},
		{"ahead", 3 * time.Second, 1, 0},
		{"behind", -2 * time.Second, 1, 0},
		{"twice as fast", 0, 2, 100 * time.Millisecond},
		{"half speed", time.Second, 0.5, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewSkewed()
			start := time.Now()
			c.Set(tc.offset, tc.rate)
			time.Sleep(tc.wait)
			skew := c.Now().Sub(time.Now())
			// The skew is the offset plus the drift over the time elapsed.
			want := tc.offset + time.Duration(float64(time.Since(start))*(tc.rate-1))
			if d := skew - want; d < -5*time.Millisecond || d > 5*time.Millisecond {
				t.Fatalf("skew %v, want %v", skew, want)
			}
			c.Set(0, 1)
			if skew := c.Now().Sub(time.Now()); skew < -time.Millisecond || skew > time.Millisecond {
				t.Fatalf("after reset skew %v, want 0", skew)
			}
		})
	}
}
