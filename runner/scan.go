package runner

import (
	"fmt"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/scenario"
)

// historyScan reads what analyze needs of a history besides its checks,
// record by record, whether the history is read whole or streamed: that
// it is valid (validHistory), the clients that broke, whether fencing
// tokens reached the resource and whether any client op got an answer.
type historyScan struct {
	cfg scenario.Config
	v   history.Validator
	// records counts the records so far.
	records int
	// end is the latest run-end mark (line endLine, 0: none yet); late is
	// the first record after it timed beyond afterEnd (line lateLine).
	endLine, lateLine int
	end, late         int64
	// broken are the errors of the clients that stopped.
	broken []string
	// tokens: some critical section took a fencing token to the resource
	// (only then did the resource's fencing setting decide anything).
	tokens bool
	// answered: some client op got a definite answer (ok or fail).
	answered bool
}

// Add takes the next record; it returns the error that makes the history
// invalid, if this record does.
func (s *historyScan) Add(r *history.Record) error {
	s.records++
	line := s.records
	if err := s.v.Add(r); err != nil {
		return err
	}
	if r.Process >= s.cfg.Clients {
		return fmt.Errorf("history line %d: process %d, but the run had %d clients (config.json)", line, r.Process, s.cfg.Clients)
	}
	switch {
	case r.Type == history.RunEnd:
		s.endLine, s.end, s.lateLine = line, r.Time, 0
	case s.endLine > 0 && s.lateLine == 0 && r.Time > s.end+int64(afterEnd(s.cfg)):
		s.lateLine, s.late = line, r.Time
	}
	switch {
	case r.Type == history.ClientFailed:
		s.broken = append(s.broken, r.Error)
	case r.F == history.FIncr && r.Token > 0:
		s.tokens = true
	}
	// A completion is of an op the history invoked: the run writes none
	// without, and history.Ops would leave one unpaired.
	if r.Process != history.NemesisProcess && (r.Type == history.OK || r.Type == history.Fail) {
		s.answered = true
	}
	return nil
}

// Err is the error that makes the history scanned so far invalid for
// its end: a record timed too long after the run-end mark.
func (s *historyScan) Err() error {
	if s.lateLine == 0 {
		return nil
	}
	return fmt.Errorf("history line %d: time %d is %s after the run-end mark (line %d), more than the %s the quiet end and final read of these settings take: not a time of this run",
		s.lateLine, s.late, time.Duration(s.late-s.end).Round(time.Millisecond), s.endLine, afterEnd(s.cfg))
}

// validHistory checks recs as any history must be (history.Validate) and
// against the run's settings: no client beyond the run's clients, and
// nothing timed later after the run-end mark than the quiet end and the
// final read take (afterEnd). history.Validate bounds each record by a
// later coordinator record; the last ones have none, and a time edited
// there would stretch the run's span and rates.
func validHistory(recs []history.Record, cfg scenario.Config) error {
	s := historyScan{cfg: cfg}
	for i := range recs {
		if err := s.Add(&recs[i]); err != nil {
			return err
		}
	}
	return s.Err()
}
