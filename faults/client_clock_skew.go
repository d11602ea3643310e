package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/scenario"
)

func init() { Register(clientClockSkew{}) }

// clientClockSkew moves the wall clock a client's lock reads: ahead or
// behind by --clock-delta, running at --clock-rate. Designs that judge
// expiry on the client's clock (SETNX + GETSET, docs/anomalies.md row 5) break.
type clientClockSkew struct{}

func (clientClockSkew) Name() string { return "client-clock-skew" }
func (clientClockSkew) Description() string {
	return "offset a client's lock clock by --clock-delta, running at --clock-rate, for the fault duration"
}
func (clientClockSkew) Traits() Traits {
	return Traits{Aim: history.AimHolder, Targets: ClientTargets | HolderTarget, Target: "client",
		Servers: ServersUntouched, Seizes: SeizeClientClock,
		Size: Size{Setting: "clock-delta", Sweeps: []Vary{VaryClock, VaryRate}, Moment: MomentGrant},
		Warn: func(c scenario.Config, _ Target) []string {
			delta, hold, ttl := time.Duration(c.ClockDelta).Abs(), time.Duration(c.HoldMax), time.Duration(c.TTL)
			if c.ClockRate != 1 || delta+hold >= ttl {
				return nil
			}
			return []string{fmt.Sprintf("client-clock-skew: a skew of %s at true speed cannot make a held lock look expired: a lock is at most "+
				"--hold-max %s old while held, so more than %s of its --ttl %s is left; use a --clock-delta beyond --ttl "+
				"or a --clock-rate other than 1", delta, hold, ttl-hold, ttl)}
		}}
}
func (clientClockSkew) Applies(impls.Design, Workload) error { return nil }

func (f clientClockSkew) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(ctx context.Context) (hit, error) {
		c, err := env.pickClient(ctx)
		if err != nil {
			return hit{}, err
		}
		if err := env.Clients.SetClock(c, env.ClockDelta, env.ClockRate); err != nil {
			return hit{}, err
		}
		return hit{target: fmt.Sprintf("c%d %s ×%g", c, signed(env.ClockDelta), env.ClockRate),
			heal: func() error { return env.Clients.SetClock(c, 0, 1) }}, nil
	})
}
