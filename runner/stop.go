package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// stopCheckEvery is how often --stop-on-violation checks the history so
// far: a stop comes at most this late, and each check costs the
// coordinator a read of the history and a porcupine pass over it.
const stopCheckEvery = time.Second

// stopOnViolation ends the run, through end, as soon as every check named
// by --stop-on-violation finds a violation in the history written so far,
// and sends the checks that did (nothing when ctx ended first). A
// violation in a prefix of the history is one in the whole: an operation
// still pending in the prefix may take effect at any time after its call
// or never, which the whole history only narrows, and the final read only
// adds constraints. So the verdict is the one the full run would give.
func (r *run) stopOnViolation(ctx context.Context, end context.CancelFunc) <-chan []string {
	found := make(chan []string, 1)
	want := r.cfg.StopOnViolation
	if len(want) == 0 {
		close(found)
		return found
	}
	path := filepath.Join(r.dir, reports.HistoryFile)
	opt := checker.Options{Timeout: stopCheckEvery, TTL: time.Duration(r.cfg.TTL)}
	go func() {
		defer close(found)
		tick := time.NewTicker(stopCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// A line being written reads as a truncated end: the prefix
			// before it is complete.
			recs, err := history.ReadFile(path)
			if err != nil && !errors.Is(err, history.ErrTruncated) {
				r.log.Warn("--stop-on-violation: reading the history", "err", err)
				return
			}
			rep := checker.Check(recs, opt)
			if ctx.Err() != nil { // the run ended meanwhile: it was not stopped
				return
			}
			verdicts := map[string]checker.Verdict{checker.MutexCheck: rep.Mutex.Verdict, checker.ResourceCheck: rep.Resource.Verdict}
			if !slices.ContainsFunc(want, func(c string) bool { return verdicts[c] != checker.Invalid }) {
				r.log.Info("stopping at the first violation", "checks", want)
				found <- want
				end()
				return
			}
		}
	}()
	return found
}
