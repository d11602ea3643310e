package faults

import (
	"context"
	"fmt"

	"github.com/locktest/locktest/impls"
)

func init() { Register(clientClockSkew{}) }

// clientClockSkew moves the wall clock a client's lock reads: ahead or
// behind by --clock-delta, running at --clock-rate. Designs that judge
// expiry on the client's clock (SETNX + GETSET, docs/anomalies.md row 5) break.
type clientClockSkew struct{}

func (clientClockSkew) Name() string { return "client-clock-skew" }
func (clientClockSkew) LinkFree()    {}
func (clientClockSkew) ServerFree()  {}
func (clientClockSkew) Size() string { return "clock-delta" }
func (clientClockSkew) Description() string {
	return "offset a client's lock clock by --clock-delta, running at --clock-rate, for the fault duration"
}
func (clientClockSkew) Targets() (Targets, string)         { return ClientTargets | HolderTarget, "client" }
func (clientClockSkew) Applies(impls.Design, string) error { return nil }

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
