// Package live follows a run while it goes: what its history says so far
// (operations, acquisitions, the faults active now, the lost updates
// already certain), which phase it is in, the processes' memory in its
// newest resource sample, and the status display of locktest run. A suite's status line and locktest serve read runs through
// it too, so all three say the same thing the same way.
package live

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/history"
)

// Phase is a step of a run, in the order they come.
type Phase string

const (
	Starting Phase = "starting servers"
	Running  Phase = "running"
	// Healing: the duration is over; the faults heal and the clients
	// finish their cycles.
	Healing   Phase = "healing"
	FinalRead Phase = "final read"
	Checking  Phase = "checking"
	Reporting Phase = "report"
	// Finishing is what a reader of the history alone can say once the
	// coordinator marked the run's end: the final read, the check and the
	// report leave no trace in the history to tell them apart.
	Finishing Phase = "finishing (final read, check, report)"
)

// Tally is what a history says so far about a run. Add records to it in
// the order the history holds them.
type Tally struct {
	// Ops counts completed client operations (ok, fail or info).
	Ops int
	// Acquisitions counts acquires that returned ok.
	Acquisitions int
	// Sections counts acknowledged critical sections (workload counter).
	Sections int
	// Lost counts lost updates already certain: an acknowledged critical
	// section that read the same value of the same key as an earlier one
	// wrote the same value, so one of the two updates is gone. The check
	// reports the same groups as violations; it may find others (a late
	// write over a newer value shows only in the final read, and so does
	// one more than recentValues below its key's newest value here).
	Lost int
	// Started is the run-start mark's time (CLOCK_MONOTONIC ns), 0 before.
	Started int64
	// Asked is the run's duration.
	Asked time.Duration
	// Ended: the coordinator marked the final heal.
	Ended bool
	// Last is the latest time of a record so far.
	Last int64
	// Strikes are the faults begun so far, healed or not, in start order.
	Strikes []history.Fault
	// Effective counts the strikes that hit so far: under which, or up to
	// Grace after whose heal, a client was granted a key another client
	// still believed it held (for a strike on one client, that client
	// was one of the two). It is the live estimate of the check's
	// efficacy (checker.Efficacy's "effective"), which judges a holder's
	// strike up to its next operation rather than its heal, and decides.
	Effective int
	// Grace is how long after a strike healed a double grant is still its
	// doing: the run's TTL (a lease granted just before a heal runs out a
	// TTL later). Set it before the first Add.
	Grace time.Duration

	written map[string]*recent
	// holders are the clients that believe they hold each key: from
	// their acquire's ok to their release's (or crash's) invocation.
	holders map[string]map[int]bool
	// hit marks the strikes counted in Effective, by index in Strikes.
	hit map[int]bool
}

// recentValues is how far below a key's newest written value the tally
// remembers the values written, so that a run of hours holds the same
// memory as a run of seconds. A counter moves up by one a section: a
// stale write further behind comes from a holder stopped for thousands of
// sections, which the check after the run still finds.
const recentValues = 4096

// recent are the values written to one key lately: those within
// recentValues of the newest, and some older ones until they are pruned.
type recent struct {
	seen   map[int64]bool
	newest int64
}

// add records a written value and says whether it was written before.
func (r *recent) add(v int64) (again bool) {
	again, r.seen[v] = r.seen[v], true
	r.newest = max(r.newest, v)
	if len(r.seen) > 2*recentValues { // prune seldom: amortized, no cost per add
		for old := range r.seen {
			if old < r.newest-recentValues {
				delete(r.seen, old)
			}
		}
	}
	return again
}

// Add counts records into the tally.
func (t *Tally) Add(recs ...history.Record) {
	for _, r := range recs {
		t.Last = max(t.Last, r.Time)
		switch r.Type {
		case history.Invoke:
			if (r.F == history.FRelease || r.F == history.FCrash) && t.holders[r.Key] != nil {
				delete(t.holders[r.Key], r.Process) // a dead client believes nothing
			}
		case history.OK, history.Fail, history.Info:
			if r.Process == history.NemesisProcess {
				continue // the coordinator's final read
			}
			t.Ops++
			if r.Type != history.OK {
				continue
			}
			switch {
			case r.F == history.FAcquire:
				t.Acquisitions++
				t.granted(r)
			case r.F == history.FIncr && r.Value != nil:
				t.Sections++
				if t.written == nil {
					t.written = map[string]*recent{}
				}
				w := t.written[r.Key]
				if w == nil {
					w = &recent{seen: map[int64]bool{}, newest: *r.Value}
					t.written[r.Key] = w
				}
				if w.add(*r.Value) {
					t.Lost++
				}
			}
		case history.FaultStart:
			t.Strikes = append(t.Strikes, history.Fault{Name: r.Fault, Target: r.Target, Moment: r.Moment, Aim: r.Aim, Start: r.Time})
		case history.FaultStop:
			// The newest open strike of the fault on the target, as
			// history.Faults pairs them.
			for i := len(t.Strikes) - 1; i >= 0; i-- {
				if s := &t.Strikes[i]; !s.Healed && s.Name == r.Fault && s.Target == r.Target {
					s.Stop, s.Healed = r.Time, true
					break
				}
			}
		case history.RunStart:
			t.Started, t.Asked = r.Time, time.Duration(r.Asked)
		case history.RunEnd:
			t.Ended = true
		}
	}
}

// granted takes an ok acquire: when another client still believes it
// holds the key, every strike active now, or healed within Grace, and
// aimed at the lock or at one of the two clients, hit.
func (t *Tally) granted(r history.Record) {
	if t.holders == nil {
		t.holders, t.hit = map[string]map[int]bool{}, map[int]bool{}
	}
	hs := t.holders[r.Key]
	if hs == nil {
		hs = map[int]bool{}
		t.holders[r.Key] = hs
	}
	var others []int
	for c := range hs {
		if c != r.Process {
			others = append(others, c)
		}
	}
	hs[r.Process] = true
	if len(others) == 0 {
		return
	}
	for i, f := range t.Strikes {
		if t.hit[i] || f.Start > r.Time || f.Healed && f.Stop+int64(t.Grace) < r.Time {
			continue
		}
		if f.Aim.OnClient() {
			c, rest, ok := history.ClientIn(f.Target)
			if ok && (rest == "" || rest[0] == ' ' || rest[0] == ':') && c != r.Process && !slices.Contains(others, c) {
				continue
			}
		}
		t.hit[i] = true
		t.Effective++
	}
}

// Active names the faults active now, "fault on target", sorted.
func (t *Tally) Active() []string {
	var out []string
	for _, s := range t.Strikes {
		if !s.Healed {
			out = append(out, s.Name+" on "+s.Target)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Phase is the phase the history shows at now (CLOCK_MONOTONIC ns): what
// a reader that is not the coordinator can tell.
func (t *Tally) Phase(now int64) Phase {
	switch {
	case t.Started == 0:
		return Starting
	case t.Ended:
		return Finishing
	case now-t.Started < int64(t.Asked):
		return Running
	default:
		return Healing
	}
}

// Elapsed is the time since the run-start mark, 0 before it.
func (t *Tally) Elapsed(now int64) time.Duration {
	if t.Started == 0 {
		return 0
	}
	return max(0, time.Duration(now-t.Started))
}

// Line says in one line where a run in phase p is at now: the phase, the
// time since the clients began against the duration asked, the counts and
// the faults active. Lost updates appear once a critical section was
// acknowledged (workload counter); the mutex check's violations are not
// known before the check.
func (t *Tally) Line(p Phase, now int64) string {
	var b strings.Builder
	b.WriteString(string(p))
	if t.Started != 0 {
		fmt.Fprintf(&b, " %.1fs/%s", t.Elapsed(now).Seconds(), t.Asked)
	}
	if t.Started == 0 && t.Ops == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, ": %d ops, %d acquisitions", t.Ops, t.Acquisitions)
	if t.Sections > 0 {
		fmt.Fprintf(&b, ", %d lost update(s) so far", t.Lost)
	}
	if len(t.Strikes) > 0 {
		fmt.Fprintf(&b, "; %d of %d strike(s) hit", t.Effective, len(t.Strikes))
	}
	if a := t.Active(); len(a) > 0 {
		fmt.Fprintf(&b, "; fault active: %s", strings.Join(a, ", "))
	}
	return b.String()
}
