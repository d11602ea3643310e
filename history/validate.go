package history

import (
	"fmt"
	"slices"
	"time"
)

// MaxString bounds every string of a record. The coordinator takes a
// worker's messages, each carrying a record, up to 1 MiB, and an exec
// client's reply lines are cut at 1 MiB too, so no string a run records
// is longer: a longer one was not written by a run.
const MaxString = 1 << 20

// AppendSkew bounds how much later than a coordinator's own record a
// record written before it may be timed. The coordinator times its
// records (run marks, fault events, final reads) as it appends them, so a
// record appended earlier was timed earlier, except by the moments the
// coordinator waited for the writer's lock between reading the clock and
// appending, which a loaded machine stretches to tens of milliseconds.
const AppendSkew = 5 * time.Second

var types = []Type{Invoke, OK, Fail, Info, FaultStart, FaultStop, ClientFailed, RunStart, RunEnd}

// Validate checks what a history says against what a run can write: each
// record's index is its position, its type is known, its numbers are in
// bounds, its strings are within MaxString, and no record is timed later
// (beyond AppendSkew) than a coordinator's record written after it. A
// history edited or damaged into well-formed JSON fails here, with the
// line and field at fault, instead of being checked as if a run had
// written it. recs is the whole history from its first line, as ReadFile
// returns it (a truncated one too).
func Validate(recs []Record) error {
	var v Validator
	for i := range recs {
		if err := v.Add(&recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Validator checks a history as Validate does, record by record, for a
// reader that does not keep the records.
type Validator struct {
	records int
	// latest is the latest time so far, of line latestLine (0: none yet).
	latest     int64
	latestLine int
}

// Add checks the next record of the history.
func (v *Validator) Add(r *Record) error {
	i := v.records
	v.records++
	if err := r.check(i); err != nil {
		return fmt.Errorf("history line %d: %w", i+1, err)
	}
	if r.Process == NemesisProcess && v.latestLine > 0 && v.latest > r.Time+int64(AppendSkew) {
		return fmt.Errorf("history line %d: time %d is %s later than that of line %d, which the coordinator wrote after it: not a time of this run",
			v.latestLine, v.latest, time.Duration(v.latest-r.Time).Round(time.Millisecond), i+1)
	}
	if r.Time > v.latest {
		v.latest, v.latestLine = r.Time, i+1
	}
	return nil
}

// field is one field of a record, named as in history.jsonl.
type field[T any] struct {
	name string
	v    T
}

// check checks one record, the i-th of its history.
func (r *Record) check(i int) error {
	switch {
	case r.Index != i:
		return fmt.Errorf("index %d, want %d: records were added, removed or reordered", r.Index, i)
	case !slices.Contains(types, r.Type):
		return fmt.Errorf("type %q is not a record type", r.Type)
	case r.Time <= 0:
		return fmt.Errorf("time %d is not a time of the run's clock (positive nanoseconds)", r.Time)
	case r.Process < NemesisProcess:
		return fmt.Errorf("process %d: want -1 (the coordinator) or a client number", r.Process)
	case r.HealStart > r.Time:
		return fmt.Errorf("heal_start %d is after the record's time %d", r.HealStart, r.Time)
	}
	counts := []field[int64]{{"seq", int64(r.Seq)}, {"cmds", int64(r.Cmds)}, {"token", r.Token}, {"asked", r.Asked}, {"heal_start", r.HealStart}}
	if r.Lag != nil {
		counts = append(counts, field[int64]{"lag.ticks", int64(r.Lag.Ticks)}, field[int64]{"lag.p99", r.Lag.P99}, field[int64]{"lag.max", r.Lag.Max})
	}
	for _, f := range counts {
		if f.v < 0 {
			return fmt.Errorf("%s %d is negative", f.name, f.v)
		}
	}
	strs := []field[string]{{"f", r.F}, {"key", r.Key}, {"error", r.Error}, {"fault", r.Fault}, {"target", r.Target}, {"moment", r.Moment}, {"point", r.Point}}
	for _, s := range r.Stopped {
		strs = append(strs, field[string]{"stopped", s})
	}
	for _, f := range strs {
		if len(f.v) > MaxString {
			return fmt.Errorf("%s is %d bytes, over the %d a run records", f.name, len(f.v), MaxString)
		}
	}
	return nil
}
