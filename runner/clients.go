package runner

import (
	"fmt"
	"time"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
)

// clientSet is the faults' handle on the workers (faults.Clients).
type clientSet struct{ r *run }

func (c clientSet) Len() int                       { return c.r.cfg.Clients }
func (c clientSet) Process(i int) *cluster.Process { return c.r.worker(i).proc }

// Crash kills client i's process, waits until everything it wrote has been
// recorded, and records per key that its lock may now expire (FCrash).
// Its unfinished operations stay without completion: unknown outcomes.
func (c clientSet) Crash(i int) error {
	r := c.r
	w := r.worker(i)
	r.mu.Lock()
	crashed := w.crashed
	r.mu.Unlock()
	if crashed {
		return fmt.Errorf("c%d has already crashed", i)
	}
	at := clock.Mono()
	if err := w.proc.Kill(); err != nil {
		return err
	}
	w.read.Wait() // the pipe drains to EOF after the kill
	r.mu.Lock()
	defer r.mu.Unlock()
	w.stdin.Close()
	w.stdin = nil
	w.crashed = true
	for k, key := range r.keys {
		r.hist.Append(history.Record{Process: i, Seq: w.maxSeq + 1 + k, Type: history.Invoke,
			F: history.FCrash, Key: key, Time: at})
	}
	return nil
}

// Restart starts a new process for crashed client i, with op numbers past
// the old ones and the clock skew it had.
func (c clientSet) Restart(i int) error {
	r := c.r
	old := r.worker(i)
	r.mu.Lock()
	if !old.crashed {
		r.mu.Unlock()
		return fmt.Errorf("c%d is running; only a crashed client restarts", i)
	}
	seqBase := old.maxSeq + len(r.keys) + 1
	r.mu.Unlock()
	// A new process is a new owner. With the dead one's seed it would draw
	// the same owner ids again, and a lock that takes a key holding its own
	// owner for a grant whose reply it lost (postgres-unique, the Redis
	// scripts) would hand it its predecessor's lock: a restart the harness
	// made safe, not the lock. Each restart steps the seed (an LCG step:
	// deterministic, never the same as before).
	wc := old.wc
	wc.Lock.Seed = wc.Lock.Seed*6364136223846793005 + 1442695040888963407
	w, err := r.startWorker(wc, seqBase)
	if w == nil {
		return fmt.Errorf("restart c%d: %w", i, err)
	}
	// Swap in the new process and give it the clock the old one had by now
	// (a fault may have skewed or healed it while the process started), in
	// one step, so that no SetClock falls between the two.
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workers[i] = w
	if err != nil {
		return fmt.Errorf("restart c%d: %w", i, err)
	}
	if old.clock != trueClock {
		return setClock(i, w, old.clock)
	}
	return nil
}

// SetClock sends the clock line to client i; a crashed client gets it when
// it restarts.
func (c clientSet) SetClock(i int, offset time.Duration, rate float64) error {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	return setClock(i, r.workers[i], clockState{offset, rate})
}

// setClock records w's clock and tells its process, if it runs; r.mu held.
func setClock(i int, w *worker, clk clockState) error {
	w.clock = clk
	if w.stdin == nil {
		return nil
	}
	if _, err := w.stdin.Write([]byte(clockLine(clk.offset, clk.rate) + "\n")); err != nil {
		return fmt.Errorf("skew c%d's clock: %w", i, err)
	}
	return nil
}
