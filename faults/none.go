package faults

import (
	"context"

	"github.com/locktest/locktest/impls"
)

func init() { Register(none{}) }

// none injects nothing: the control run every correct design must pass.
type none struct{}

func (none) Name() string                          { return "none" }
func (none) Description() string                   { return "no fault: the control run" }
func (none) Applies(impls.Design, string) error    { return nil }
func (none) Run(ctx context.Context, _ *Env) error { <-ctx.Done(); return nil }
func (none) LinkFree()                             {}
func (none) ServerFree()                           {}
func (none) ClientFree()                           {}
