package faults

import (
	"context"
	"fmt"

	"github.com/locktest/locktest/impls"
)

func init() {
	Register(pauseClient{"pause-client", ClientTargets | HolderTarget, "client",
		"SIGSTOP a client process for the fault duration, then SIGCONT (a stop-the-world pause)"})
}

// pauseClient freezes a client process with SIGSTOP, as a stop-the-world GC
// pause does. Aimed at the holder (pause-holder) it stops the client inside
// its critical section, after it read the resource and before it writes.
type pauseClient struct {
	name    string
	accepts Targets
	def     string
	desc    string
}

func (f pauseClient) Name() string                     { return f.name }
func (pauseClient) LinkFree()                          {}
func (pauseClient) ServerFree()                        {}
func (f pauseClient) Description() string              { return f.desc }
func (f pauseClient) Targets() (Targets, string)       { return f.accepts, f.def }
func (pauseClient) Applies(impls.Design, string) error { return nil }

func (f pauseClient) Run(ctx context.Context, env *Env) error {
	return every(ctx, env, f.name, func(ctx context.Context) (hit, error) {
		c, err := env.pickClient(ctx)
		if err != nil {
			return hit{}, err
		}
		p := env.Clients.Process(c)
		if err := p.Pause(); err != nil {
			return hit{}, err
		}
		return hit{target: fmt.Sprintf("c%d", c), heal: p.Resume}, nil
	})
}
