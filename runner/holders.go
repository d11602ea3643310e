package runner

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// momentFeed tells faults which client just reached a lock moment
// (faults.MomentGrant, MomentAcquire, MomentRelease).
type momentFeed struct {
	mu      sync.Mutex
	waiters map[string][]chan int
}

func (f *momentFeed) notify(moment string, client int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.waiters[moment] {
		w <- client // buffered: each waiter takes exactly one
	}
	delete(f.waiters, moment)
}

// next waits for the next client to reach moment.
func (f *momentFeed) next(ctx context.Context, moment string) (int, error) {
	ch := make(chan int, 1)
	f.mu.Lock()
	if f.waiters == nil {
		f.waiters = map[string][]chan int{}
	}
	f.waiters[moment] = append(f.waiters[moment], ch)
	f.mu.Unlock()
	select {
	case c := <-ch:
		return c, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// pauseFeed hands the worker that reached an armed checkpoint to the
// fault that armed it. The worker waits there for a continue line; it is
// sent only once every thread of the worker has stopped (SIGSTOP returns
// before they all have), so the worker cannot run on past the checkpoint.
// Exactly one worker is taken per arming: one that arrives after the fault
// got its worker just continues.
type pauseFeed struct {
	mu   sync.Mutex
	want chan int // non-nil while a fault waits
}

// stopped is called when w reports it is waiting at a checkpoint.
func (p *pauseFeed) stopped(r *run, w *worker) {
	p.mu.Lock()
	if p.want != nil {
		err := w.proc.Pause()
		if err == nil {
			err = w.proc.WaitAllStopped(time.Second)
		}
		if err == nil {
			p.want <- w.id // buffered: one taker
			p.want = nil
		} else {
			slog.Warn("could not stop a worker at its checkpoint", "client", w.id, "err", err)
			_ = w.proc.Resume()
		}
	}
	p.mu.Unlock()
	r.send(w, continueLine)
}

// pauseAt arms every worker for point and returns the first to stop there
// (faults.Env.PauseAt).
func (r *run) pauseAt(ctx context.Context, point string) (int, error) {
	ch := make(chan int, 1)
	r.pauses.mu.Lock()
	r.pauses.want = ch
	r.pauses.mu.Unlock()
	r.sendAll(pauseAtLine + point)
	defer r.sendAll(disarmLine)
	select {
	case c := <-ch:
		return c, nil
	case <-ctx.Done():
		r.pauses.mu.Lock()
		r.pauses.want = nil
		r.pauses.mu.Unlock()
		select { // it may have stopped just now
		case c := <-ch:
			_ = r.worker(c).proc.Resume()
		default:
		}
		return 0, ctx.Err()
	}
}

// send writes a control line to w if it still listens.
func (r *run) send(w *worker, line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.stdin != nil {
		_, _ = w.stdin.Write([]byte(line + "\n"))
	}
}

// sendAll writes a control line to every listening worker.
func (r *run) sendAll(line string) {
	r.mu.Lock()
	workers := append([]*worker(nil), r.workers...)
	r.mu.Unlock()
	for _, w := range workers {
		r.send(w, line)
	}
}
