package workloads

import "context"

func init() {
	Register(Workload{
		Name:        "mutex",
		Description: "acquire, hold a random time, release: checks mutual exclusion only",
		Cycle: func(ctx context.Context, e *Env) {
			key := e.key()
			g, ok := e.acquire(ctx, key)
			if !ok {
				return
			}
			e.Sink.InCriticalSection()
			e.hold()
			e.release(key, g)
		},
	})
}
