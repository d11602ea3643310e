package runner

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/locktest/locktest/impls"
)

// Warnings says, one line each, where the flags keep a fault from doing
// what it is for, so that a run is not read as evidence it cannot give (a
// pause shorter than the lease proves nothing about leases). Each holds for
// the faults as written (see faults/*.go); none stops the run, since a run
// may mean to show exactly that.
func Warnings(r Resolved) []string {
	c := r.Config
	d := func(v Duration) time.Duration { return time.Duration(v) }
	pause, hold, ttl, io := d(c.FaultDuration), d(c.HoldMax), d(c.TTL), d(c.IOTimeout)
	var out []string
	warn := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	injects := false
	for _, name := range c.Faults {
		injects = injects || name != "none"
	}
	if !injects {
		return nil
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

	for i, name := range c.Faults {
		switch name {
		case "pause-holder", "pause-acquire":
			// The client is stopped just after its grant: its lease is
			// nearly whole.
			if pause+hold < ttl {
				warn("%s: pauses of %s plus --hold-max %s are shorter than --ttl %s: a client paused just after its grant "+
					"still has its lease when it resumes; use a --fault-duration above --ttl", name, pause, hold, ttl)
			}
		case "pause-client", "pause-waiter":
			// A lease is fresh at its grant, and designs that keep leases
			// alive renew them at least every TTL/2.
			if pause+hold < ttl/2 {
				warn("%s: pauses of %s plus --hold-max %s are under half of --ttl %s: any paused client's lease "+
					"(granted or kept alive within the last TTL/2) outlasts the pause; use a --fault-duration above --ttl",
					name, pause, hold, ttl)
			}
		case "slow-resource-write":
			// The delay is the fault duration; the resource client waits
			// --io-timeout for a reply.
			if pause > io {
				warn("slow-resource-write: writes are delayed by --fault-duration %s, longer than --io-timeout %s: the holder gives up "+
					"on its write and releases instead of waiting past its lease; set --io-timeout above %s", pause, io, pause)
			}
			if pause+hold < ttl {
				warn("slow-resource-write: a write delayed by %s, sent within --hold-max %s of its grant, lands before the --ttl %s lease "+
					"runs out, so no other client can be granted first; use a --fault-duration above --ttl", pause, hold, ttl)
			}
		case "latency":
			switch {
			case c.Latency == 0:
				warn("latency: --latency 0s adds no delay: the fault changes nothing")
			case c.Latency-c.Jitter >= c.IOTimeout && c.Impl != impls.ExecName && reachesClients(r, i):
				warn("latency: every request on a client's link is delayed at least %s (--latency less --jitter), not less than "+
					"--io-timeout %s: the client times out on each, so no slow reply ever arrives in time", d(c.Latency-c.Jitter), io)
			}
		case "failover":
			// Clients stay on the old primary, frozen after its last grant,
			// until a request to it times out.
			if hold < io {
				warn("failover: holds end within --hold-max %s, before any other client can reach the promoted replica "+
					"(each first times out on the frozen old primary, after --io-timeout %s), so the lost grant never "+
					"overlaps another; use a --hold-max above --io-timeout (1-2 s works)", hold, io)
			}
		case "clock-bump", "clock-strobe", "redlock-clock-jump":
			// A held key is at most --hold-max old; a jump of delta either
			// way (the heal jumps back) expires only keys with less left.
			if delta := d(c.ClockDelta).Abs(); delta+hold < ttl {
				warn("%s: a clock jump of %s cannot expire a held key early: a key is at most --hold-max %s old while held, "+
					"so more than %s of its --ttl %s is left; use a --clock-delta beyond --ttl", name, delta, hold, ttl-hold, ttl)
			}
		case "client-clock-skew":
			if delta := d(c.ClockDelta).Abs(); c.ClockRate == 1 && delta+hold < ttl {
				warn("client-clock-skew: a skew of %s at true speed cannot make a held lock look expired: a lock is at most "+
					"--hold-max %s old while held, so more than %s of its --ttl %s is left; use a --clock-delta beyond --ttl "+
					"or a --clock-rate other than 1", delta, hold, ttl-hold, ttl)
			}
		}
	}
	return out
}

// reachesClients reports whether link fault i may delay a client's link:
// not when it aims only at links between servers.
func reachesClients(r Resolved, i int) bool {
	if i >= len(r.Targets) {
		return true // the default target: a node with all its links
	}
	spec := r.Targets[i].Spec
	if link, ok := strings.CutPrefix(spec, "link:"); ok {
		from, _, _ := strings.Cut(link, ":")
		return clientName.MatchString(from)
	}
	return !strings.HasSuffix(spec, "/peers")
}

// clientName is how links name a client end ("c3").
var clientName = regexp.MustCompile(`^c\d+$`)
