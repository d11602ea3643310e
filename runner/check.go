package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// checkedHistory is what analyze's checks found in a history.
type checkedHistory struct {
	// recs is the history, when it was read whole (for the report).
	recs      []history.Record
	truncated bool
	checks    checker.Report
	metrics   checker.Metrics
	health    *reports.Health
	scan      historyScan
	// places are where the records of a streamed history begin.
	places history.Places
	// window says what part of a history too long to draw whole recs is.
	window string
}

// wholeHistoryBytes is the longest history a report is drawn from whole,
// some 600,000 operations, which take about 2.8 bytes of heap per byte of
// it: past it, a run's history (a soak's) is checked as it is read, in
// memory that does not grow with its length, and the report's history
// plots show plotRecords of its records (window). A variable for tests.
var wholeHistoryBytes int64 = 128 << 20

// drawnWhole says whether a history of size bytes is read whole: only for
// a report, and only up to wholeHistoryBytes.
func drawnWhole(size int64, report bool) bool { return report && size <= wholeHistoryBytes }

// plotRecords is how many records the history plots of a history too long
// to draw whole show: minutes of a fast run, most of an hour's soak.
const plotRecords = 200_000

// checkHistory checks the history in dir, its lease judged drift shorter
// (see clockDrift). With report, it keeps the
// records the report's plots are drawn from: the whole history, read whole,
// unless it is longer than wholeHistoryBytes. Otherwise it is streamed
// (checkStream), in memory that does not grow with its length, unless its
// records are too far out of time order for that. A history missing or
// damaged is a BadConfigError that says so.
func checkHistory(dir string, cfg Resolved, drift float64, report bool) (checkedHistory, error) {
	path := filepath.Join(dir, reports.HistoryFile)
	opt := checker.Options{Timeout: time.Duration(cfg.CheckTimeout), TTL: time.Duration(cfg.TTL), Drift: drift}
	var f checkedHistory
	size, err := history.Size(path)
	whole := drawnWhole(size, report)
	if !whole && err == nil {
		f, err = checkStream(path, cfg, opt)
		if errors.Is(err, checker.ErrOutOfOrder) {
			// Its memory then grows with the history's length.
			slog.Warn("the history's records are too far out of time order to check as they are read: checking it whole", "history", path, "err", err)
			whole = true
		}
	}
	if whole {
		f, err = checkWhole(path, cfg, opt)
	}
	if report && !whole && (err == nil || errors.Is(err, history.ErrTruncated)) {
		if werr := f.readWindow(path, size); werr != nil {
			err = werr
		}
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
func checkWhole(path string, cfg Resolved, opt checker.Options) (checkedHistory, error) {
	f := checkedHistory{scan: historyScan{cfg: cfg.Config}}
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
// (faults, a verdict not valid), reads again the stretches of it the
// explanations need (checker.Explainer), beginning each at a place the
// first reading remembered (history.Places): the memory it takes is what
// is in flight and what is around the faults and the failures, not the
// history, and the second reading is as long as those stretches. Its results are
// checkWhole's. A record too far out of time order is
// checker.ErrOutOfOrder, which checkWhole can still check.
func checkStream(path string, cfg Resolved, opt checker.Options) (checkedHistory, error) {
	f := checkedHistory{scan: historyScan{cfg: cfg.Config}}
	c := checker.NewChecker(opt)
	var health reports.HealthMeter
	var places history.Places
	err := each(path, 0, func(r *history.Record, offset int64) error {
		if err := f.scan.Add(r); err != nil {
			return err
		}
		health.Add(r)
		places.Add(r, offset)
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
	// The stretches the explanations need, each from the place before
	// it, up to the cut-off line if there is one.
	var next int64
	for _, s := range x.Stretches() {
		from := max(next, places.From(s[0]))
		rerr := each(path, from, func(r *history.Record, offset int64) error {
			if next = from + offset; history.Past(r.Time, s[1]) {
				return errStretchRead
			}
			x.Add(r)
			return nil
		})
		if rerr == nil || errors.Is(rerr, history.ErrTruncated) {
			break // read to the end
		}
		if rerr != errStretchRead {
			return f, fmt.Errorf("read again to explain: %w", rerr)
		}
	}
	f.checks, f.metrics, f.health = x.Report(), c.Metrics(), healthOf(&health, cfg)
	f.places = places
	return f, err
}

// readWindow reads into f.recs the records of a streamed history (size
// bytes) the report draws: plotRecords of them, beginning a quarter of
// that before the first violation, or the last ones of a history that
// has none, and says so in f.window.
func (f *checkedHistory) readWindow(path string, size int64) error {
	first, where := int64(history.Never), "its last ones"
	for _, v := range slices.Concat(f.checks.Mutex.Violations, f.checks.Resource.Violations) {
		if v.Time > 0 { // one with a time
			first = min(first, v.Time)
		}
	}
	from := f.places.Last(plotRecords)
	if first != history.Never {
		from, where = f.places.Before(first, plotRecords/4), "from shortly before the first violation"
	}
	f.recs = make([]history.Record, 0, plotRecords)
	err := each(path, from, func(r *history.Record, _ int64) error {
		if len(f.recs) == plotRecords {
			return errStretchRead
		}
		f.recs = append(f.recs, *r)
		return nil
	})
	if err != nil && err != errStretchRead && !errors.Is(err, history.ErrTruncated) {
		return fmt.Errorf("read the records to draw: %w", err)
	}
	f.window = fmt.Sprintf("the history (%d MB, %d records) is too long to draw whole: it was checked as it was read, and the timeline, latency and rate plots show %d of its records, %s; the memory plots cover the whole run",
		size>>20, f.scan.records, len(f.recs), where)
	return nil
}

// errStretchRead ends the reading of a stretch of the history.
var errStretchRead = errors.New("stretch read")

// each calls fn with each record of the history at path from offset on,
// and where its line begins (history.Each).
func each(path string, offset int64, fn func(*history.Record, int64) error) error {
	file, err := history.Open(path, offset)
	if err != nil {
		return err
	}
	defer file.Close()
	return history.Each(file, fn)
}
