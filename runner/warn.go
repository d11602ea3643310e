package runner

import (
	"fmt"
	"regexp"
	"time"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/scenario"
)

// lengthFlag is the flag of a fault's length in a warning.
var lengthFlag = regexp.MustCompile(`--fault-duration\b`)

// Warnings says, one line each, where the flags keep a fault from doing
// what it is for, so that a run is not read as evidence it cannot give (a
// pause shorter than the lease proves nothing about leases). Each fault
// says its own (faults.Traits.Warn); none stops the run, since a run may
// mean to show exactly that. The proxy standing in for the lab
// (NetworkNote) is not one: it says how the run was made, not what it
// cannot show.
func Warnings(r Resolved) []string {
	c := r.Config
	d := func(v scenario.Duration) time.Duration { return time.Duration(v) }
	pause := d(c.FaultDuration)
	var out []string
	warn := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	if !faults.Injects(r.Faults) {
		return out
	}
	// Every fault's schedule (faults.Env.Wait) first stays quiet for
	// Interval/2 plus a random part.
	if d(c.Duration) <= d(c.FaultInterval)/2 {
		warn("no fault will start: each waits at least --fault-interval/2 (%s) first, and --duration is %s",
			d(c.FaultInterval)/2, d(c.Duration))
	} else if c.FaultInterval < c.FaultDuration {
		warn("--fault-interval %s is shorter than --fault-duration %s: each fault is on longer than the mean quiet time before it, "+
			"so the lock has little fault-free time to recover between faults", d(c.FaultInterval), pause)
	}

	for i, f := range r.Faults {
		var t faults.Target
		if i < len(r.Targets) {
			t = r.Targets[i]
		}
		if warn := f.Traits().Warn; warn != nil {
			for _, w := range warn(faults.Own(c, f), t) {
				if faults.Second(c, f) { // it lasts --fault-duration2
					w = lengthFlag.ReplaceAllString(w, "--fault-duration2")
				}
				out = append(out, w)
			}
		}
	}
	return out
}
