package faults

import (
	"context"
	"time"

	"github.com/locktest/locktest/cluster"
)

func init() { Register(clockStrobe{serverClock{"clock-strobe"}}) }

// strobePeriod is how often clock-strobe flips a clock.
const strobePeriod = 50 * time.Millisecond

// clockStrobe flips servers' wall clocks between true time and
// --clock-delta every 50 ms for the fault duration, as Jepsen's strobe
// does: time runs back and forth, and anything computed from two readings
// can be off by the delta either way.
type clockStrobe struct{ serverClock }

func (clockStrobe) Description() string {
	return "flip servers' wall clocks between true time and --clock-delta every 50ms for the fault duration (redis only)"
}

func (f clockStrobe) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(context.Context) (hit, error) {
		return f.strike(env, func(ctx context.Context, nodes []*cluster.Node) {
			end := time.Now().Add(env.Duration)
			for on := false; time.Now().Before(end) && sleep(ctx, strobePeriod); on = !on {
				for _, n := range nodes {
					d := time.Duration(0)
					if on {
						d = env.ClockDelta
					}
					if err := n.Clock.SetOffset(d); err != nil {
						env.Log.Warn("clock-strobe", "node", n.Name, "err", err)
					}
				}
			}
		})
	})
}
