package runner

import (
	"context"
	"slices"
	"sync"
)

// serverHolds has one slot per address of a user's server (--servers):
// runs of one process (a suite's, a sweep's, a search's, however
// parallel) take their servers one run at a time. Two runs on one server
// would contend for the same lock keys, and one's pause-node would stop
// the other's server.
var serverHolds sync.Map // address → chan struct{} of capacity 1

// holdServers waits until no other run of this process uses any of addrs
// and takes them, in sorted order so that two runs never wait on each
// other. release gives them back; calls after the first do nothing.
func holdServers(ctx context.Context, addrs []string) (release func(), err error) {
	var held []chan struct{}
	release = sync.OnceFunc(func() {
		for _, c := range held {
			<-c
		}
	})
	for _, a := range slices.Sorted(slices.Values(addrs)) {
		v, _ := serverHolds.LoadOrStore(a, make(chan struct{}, 1))
		slot := v.(chan struct{})
		select {
		case slot <- struct{}{}:
			held = append(held, slot)
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}
