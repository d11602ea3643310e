package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
)

// verifyHealed runs after every fault has returned, before the last
// operations and the checks. Each fault heals what it did; this looks at
// the processes, links and clocks themselves, undoes anything still in
// effect, and reports it as an error: a fault that does not heal is a bug.
func (r *run) verifyHealed(env *faults.Env, resource *cluster.Node) error {
	var left, errs []string
	fix := func(what string, err error) {
		left = append(left, what)
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	for i := range r.cfg.Clients {
		w := r.worker(i)
		r.mu.Lock()
		crashed, skew := w.crashed, w.clock
		r.mu.Unlock()
		switch {
		case crashed:
			fix(fmt.Sprintf("c%d crashed", i), env.Clients.Restart(i))
		case w.proc.Stopped():
			fix(fmt.Sprintf("c%d stopped", i), w.proc.Resume())
		}
		if skew != trueClock {
			fix(fmt.Sprintf("c%d clock skewed", i), env.Clients.SetClock(i, 0, 1))
		}
	}
	nodes := env.Nodes
	if resource != nil {
		nodes = append(nodes[:len(nodes):len(nodes)], resource)
	}
	for _, n := range nodes {
		p := n.Process()
		if exited, _ := p.Exited(); exited {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			fix(n.Name+" down", n.Start(ctx))
			cancel()
		} else if p.Stopped() {
			fix(n.Name+" stopped", p.Resume())
		}
		if n.Clock != nil && n.Clock.Offset() != 0 {
			fix(fmt.Sprintf("%s clock off by %v", n.Name, n.Clock.Offset()), n.Clock.SetOffset(0))
		}
	}
	for _, l := range env.Links {
		if t := l.Toxics(); len(t) > 0 {
			fix(fmt.Sprintf("link %s %s", l.Name, strings.Join(t, "+")), l.Heal(""))
		}
	}
	if len(left) == 0 {
		return nil
	}
	err := fmt.Errorf("final heal found faults still in effect (a fault did not heal): %s", strings.Join(left, "; "))
	if len(errs) > 0 {
		err = errors.Join(err, fmt.Errorf("and could not undo all: %s", strings.Join(errs, "; ")))
	}
	return err
}
