package faults

import "context"

func init() { Register(clockBump{serverClock{"clock-bump"}}) }

// clockBump steps servers' wall clocks by --clock-delta (an NTP step, an
// operator's date command) and steps them back after the fault duration.
// A forward jump expires Redis keys early: Redlock's clock assumption
// (docs/anomalies.md row 8).
type clockBump struct{ serverClock }

func (clockBump) Description() string {
	return "jump servers' wall clocks by --clock-delta (default +2×TTL) for the fault duration (redis only)"
}

func (f clockBump) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.Name(), func(context.Context) (hit, error) { return f.strike(env, nil) })
}
