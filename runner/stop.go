package runner

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// stopCheckEvery is how often --stop-on-violation reads what the history
// gained: a stop comes at most this late after the violation's segment is
// decided.
const stopCheckEvery = time.Second

// stopWholeRecords is the longest history --stop-on-violation also checks
// whole every second: a few minutes of a fast run, checked in a fraction
// of the second.
const stopWholeRecords = 50_000

// stopOnViolation ends the run, through end, as soon as every check named
// by --stop-on-violation finds a violation in the history written so far,
// and sends the checks that did (nothing when ctx ended first). A
// violation in a prefix of the history is one in the whole: an operation
// still pending in the prefix may take effect at any time after its call
// or never, which the whole history only narrows, and the final read only
// adds constraints. So the verdict is the one the full run would give.
//
// The history is checked as it grows: a checker.Checker is fed what a
// Follower reads each second and decides each key's segments as they
// close, so a night's watch costs what its records cost once. A segment
// closes only once every op in it returned, which under a pause may be
// seconds after the violation; so while the history is short (up to
// stopWholeRecords) the records so far are also checked whole each second,
// as Check checks a prefix, and the first of the two to find the
// violation stops the run. Porcupine's searches get what is left of the
// run's --check-timeout, counted from the start; past it only the linear
// sweep of segments whose outcomes are all known watches.
func (r *run) stopOnViolation(ctx context.Context, end context.CancelFunc) <-chan []string {
	found := make(chan []string, 1)
	want := r.cfg.StopOnViolation
	if len(want) == 0 {
		close(found)
		return found
	}
	follow := history.Follow(filepath.Join(r.dir, reports.HistoryFile))
	opt := checker.Options{Timeout: time.Duration(r.cfg.CheckTimeout), TTL: time.Duration(r.cfg.TTL)}
	c := checker.NewChecker(opt)
	var prefix []history.Record // while short
	go func() {
		defer close(found)
		// Report stops the check's workers; its verdicts are not used.
		defer c.Report()
		tick := time.NewTicker(stopCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// A line being written is read once complete.
			recs, err := follow.Poll()
			for i := 0; err == nil && i < len(recs); i++ {
				err = c.Add(&recs[i])
			}
			if err != nil {
				r.log.Warn("--stop-on-violation: checking the history as it grows; the run goes on to its end", "err", err)
				return
			}
			mutex, resource := c.Violated()
			if prefix = append(prefix, recs...); len(prefix) > stopWholeRecords {
				prefix = nil
			} else if prefix != nil {
				rep := checker.Check(prefix, checker.Options{Timeout: stopCheckEvery, TTL: opt.TTL})
				mutex, resource = mutex || rep.Mutex.Verdict == checker.Invalid, resource || rep.Resource.Verdict == checker.Invalid
			}
			if ctx.Err() != nil { // the run ended meanwhile: it was not stopped
				return
			}
			verdicts := map[string]bool{checker.MutexCheck: mutex, checker.ResourceCheck: resource}
			if !slices.ContainsFunc(want, func(c string) bool { return !verdicts[c] }) {
				r.log.Info("stopping at the first violation", "checks", want)
				found <- want
				end()
				return
			}
		}
	}()
	return found
}
