package faults

import (
	"context"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

func init() { Register(none{}) }

// None is the control run's fault: a search's fault-free rerun asks for it.
const None = "none"

// none injects nothing: the control run every correct design must pass.
type none struct{}

func (none) Name() string                          { return None }
func (none) Description() string                   { return "no fault: the control run" }
func (none) Applies(impls.Design, Workload) error  { return nil }
func (none) Run(ctx context.Context, _ *Env) error { <-ctx.Done(); return nil }

// Traits: none touches nothing, so its runs dial servers directly and
// batch the workers' messages.
func (none) Traits() Traits {
	return Traits{Aim: history.AimLock, Servers: ServersUntouched, Inert: true}
}
