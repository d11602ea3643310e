package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// found is what analyze's checks found in a history.
type found struct {
	// recs is the history, when it was read whole (for the report).
	recs      []history.Record
	truncated bool
	checks    checker.Report
	metrics   checker.Metrics
	health    *reports.Health
	scan      historyScan
}

// checkHistory checks the history in dir. whole reads it whole and keeps
// it, as the report's plots and pages need it; otherwise it is streamed
// (checkStream), in memory that does not grow with its length, unless its
// records are too far out of time order for that. A history missing or
// damaged is a BadConfigError that says so.
func checkHistory(dir string, cfg Resolved, whole bool) (found, error) {
	path := filepath.Join(dir, reports.HistoryFile)
	opt := checker.Options{Timeout: time.Duration(cfg.CheckTimeout), TTL: time.Duration(cfg.TTL)}
	var f found
	var err error
	if !whole {
		f, err = checkStream(path, cfg, opt)
		if errors.Is(err, checker.ErrOutOfOrder) {
			whole = true
		}
	}
	if whole {
		f, err = checkWhole(path, cfg, opt)
	}
	switch {
	case errors.Is(err, history.ErrTruncated):
		f.truncated = true
	case errors.Is(err, fs.ErrNotExist):
		return f, bad("%s has no %s: not a run directory, or its run never started (give store/latest or store/<scenario>/<run>)", dir, reports.HistoryFile)
	case err != nil:
		// Not the cut-off end of a killed run: someone edited or damaged it.
		return f, bad("%s: %v; the history is damaged and cannot be checked", path, err)
	}
	return f, nil
}

// healthOf names the faults the run asked for, not the looked-up faults:
// a stored run is analyzed without resolving them against a design
// (LoadRun).
func healthOf(m *reports.HealthMeter, cfg Resolved) *reports.Health {
	return m.Health(faults.MemberNames(cfg.Config.Faults), cfg.Workload.NeedsResource)
}

// checkWhole reads the history at path whole and checks it.
func checkWhole(path string, cfg Resolved, opt checker.Options) (found, error) {
	f := found{scan: historyScan{cfg: cfg.Config}}
	recs, err := history.ReadFile(path)
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return f, err
	}
	var health reports.HealthMeter
	for i := range recs {
		if err := f.scan.Add(&recs[i]); err != nil {
			return f, err
		}
		health.Add(&recs[i])
	}
	if err := f.scan.Err(); err != nil {
		return f, err
	}
	f.recs, f.health = recs, healthOf(&health, cfg)
	f.checks, f.metrics = checker.Check(recs, opt), checker.Measure(recs)
	return f, err
}

// checkStream checks the history at path as it reads it, record by
// record (checker.Checker), and, when the check has something to explain
// (faults, a verdict not valid), reads it again for the explanations
// (checker.Explainer): the memory it takes is what is in flight and what
// is around the faults and the failures, not the history. Its results are
// checkWhole's. A record too far out of time order is
// checker.ErrOutOfOrder, which checkWhole can still check.
func checkStream(path string, cfg Resolved, opt checker.Options) (found, error) {
	f := found{scan: historyScan{cfg: cfg.Config}}
	c := checker.NewChecker(opt)
	var health reports.HealthMeter
	err := each(path, func(r *history.Record) error {
		if err := f.scan.Add(r); err != nil {
			return err
		}
		health.Add(r)
		return c.Add(r)
	})
	// Report ends the check's workers, after an error too.
	rep := c.Report()
	if err == nil || errors.Is(err, history.ErrTruncated) {
		if serr := f.scan.Err(); serr != nil {
			err = serr
		}
	}
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return f, err
	}
	x := c.Explainer(rep)
	if x.NeedsHistory() {
		// The same records again, up to the cut-off line if there is one.
		if err2 := each(path, func(r *history.Record) error { x.Add(r); return nil }); err2 != nil && !errors.Is(err2, history.ErrTruncated) {
			return f, fmt.Errorf("read again to explain: %w", err2)
		}
	}
	f.checks, f.metrics, f.health = x.Report(), c.Metrics(), healthOf(&health, cfg)
	return f, err
}

// each calls fn with each record of the history at path (history.Each).
func each(path string, fn func(*history.Record) error) error {
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	defer file.Close()
	return history.Each(file, fn)
}
