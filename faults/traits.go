package faults

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/scenario"
)

// Traits is what a fault is, declared once in the fault's own file. The
// rest of locktest reads these and never knows a fault by its name, so a
// new fault is one file, and a renamed one is still judged, warned about,
// swept and searched as what it does.
type Traits struct {
	// Aim is whom the fault strikes. The run writes it on each fault-start
	// of the history, where the efficacy check reads it.
	Aim history.Aim
	// Targets are the kinds of target the fault accepts (0: it takes no
	// --fault-target) and Target its default.
	Targets Targets
	Target  string
	// Servers is what the fault does to server processes.
	Servers ServerAct
	// ServerClocks: it moves servers' wall clocks, so its runs start every
	// server under the clock shim.
	ServerClocks bool
	// Links: it may act on a link between a client and a server. A run
	// whose faults never do has its clients dial the servers directly,
	// because a link costs every round trip a hop through the coordinator
	// (a quarter of the harness's lock cycles per second).
	Links bool
	// Net is what making the fault needs of the links it acts on (see
	// NetNeed).
	Net NetNeed
	// Inert: it acts on nothing, not even at a client's lock moment (the
	// control run). In a run whose faults all are, the coordinator acts on
	// no client message as it comes, so the workers send theirs in batches
	// instead of one write and one wake-up of the coordinator per invoke
	// (runner.WorkerConfig.Batch).
	Inert bool
	// AtCheckpoint: it stops a client at the checkpoint the run names
	// (--checkpoint, Env.Checkpoint), any the design lists, so a search
	// sets that too and tries each of the design's checkpoints.
	AtCheckpoint bool
	// Size is the fault's magnitude and how sweeps and searches turn it.
	Size Size
	// Seizes is what the fault holds alone while it strikes (one of the
	// Seize constants; "" for nothing): two faults that seize the same
	// thing cannot make a pair, since one's heal would undo the other's
	// strike (a SIGCONT ending another's pause).
	Seizes string
	// OwnSchedule: its strikes follow steps of their own (a failover waits
	// for Sentinel), not the shared schedule (every), so it cannot strike
	// together with another fault in a pair.
	OwnSchedule bool
	// Warn says, one line each, under which settings the fault cannot do
	// what it is for (a pause shorter than the lease proves nothing about
	// leases), so a run is not read as evidence it cannot give. t is the
	// fault's target. Nil: no such settings.
	Warn func(c scenario.Config, t Target) []string
}

// What faults seize (Traits.Seizes), as a refusal names it.
const (
	SeizeClientProcess = "a client process" // SIGSTOP or SIGKILL
	SeizeServerProcess = "server processes" // SIGSTOP or SIGKILL
	SeizeServerClocks  = "servers' clocks"  // the clock shim's offset
	SeizeClientClock   = "a client's clock" // the lock's clock offset and rate
)

// seizures lists the Seize constants.
var seizures = []string{"", SeizeClientProcess, SeizeServerProcess, SeizeServerClocks, SeizeClientClock}

// ServerAct is what a fault does to server processes; it decides whether
// the fault may run against servers the user runs (--servers).
type ServerAct int

const (
	// ServersOwned: it kills, restarts, re-clocks or reconfigures servers,
	// so it runs only against servers locktest started. It is the zero
	// value: a fault that does not say is never let loose on a user's.
	ServersOwned ServerAct = iota
	// ServersUntouched: it acts on no server process (clients, links).
	ServersUntouched
	// ServersSignalled: its one act on servers is SIGSTOP and SIGCONT;
	// with --servers it needs their pids (--server-pids).
	ServersSignalled
)

// NetNeed is what a link fault needs of what makes its links' effects:
// a proxy per path, or the kernel's firewall in a lab of network
// namespaces (--network netns, cluster.Lab).
type NetNeed int

const (
	// NetAny: a proxy and the kernel both make it (a partition, a reset).
	NetAny NetNeed = iota
	// NetProxy: only a proxy makes it; a delay needs netem, which the
	// kernels locktest runs on may lack, so a run with it uses the proxy.
	NetProxy
	// NetKernel: only the kernel makes it (one-way partitions, packet
	// loss): a proxy forwards bytes on connections, not packets.
	NetKernel
)

// Size is a fault's magnitude, which what it can show depends on: a
// pause, a delay or a clock jump compared with the lease.
type Size struct {
	// Setting is the flag of the setting that is the magnitude:
	// fault-duration (a pause's, a delay's or a restart's length) when
	// empty, else latency or clock-delta.
	Setting string
	// Sweeps are the magnitudes an envelope may sweep, its default first;
	// none when the fault has no single magnitude (a failover, a split).
	Sweeps []Vary
	// Moment is where a sweep's strikes go: MomentGrant, so that the size
	// alone decides, or MomentAny for a fault that places its own strike.
	Moment string
	// Target is a sweep's target when the fault's default would make some
	// strikes no try at all ("" keeps the default). TargetLockServers
	// means every server that holds the lock.
	Target string
}

// TargetLockServers is a Size.Target: the servers that hold the lock (the
// primary of a replicated design, every node of Redlock), resolved per
// design by SweepTarget.
const TargetLockServers = "lock-servers"

// Vary names a magnitude an envelope sweeps.
type Vary string

// The magnitudes. All but rate are multiples of the TTL.
const (
	// VaryPause is the fault's length: how long a process or server stays
	// stopped.
	VaryPause Vary = "pause"
	// VaryDelay is how long a request is held.
	VaryDelay Vary = "delay"
	// VaryClock is how far a clock jumps forward (clock-delta).
	VaryClock Vary = "clock"
	// VaryRate is how fast a skewed client clock runs (clock-rate, 1 is
	// true speed); a rate, not a multiple of the TTL.
	VaryRate Vary = "rate"
	// VaryLockDelay is a holder's pause swept against a design with a
	// lock-delay (impls.Design.LockDelay): the pause must outlive the
	// lease and the delay both.
	VaryLockDelay Vary = "lockdelay"
)

// Varies lists the magnitudes, in the order the help gives them.
var Varies = []Vary{VaryPause, VaryDelay, VaryClock, VaryRate, VaryLockDelay}

// SizeSetting is the flag of the setting that sizes f.
func SizeSetting(f Fault) string {
	if s := f.Traits().Size.Setting; s != "" {
		return s
	}
	return "fault-duration"
}

// SetSize gives fault f of c the magnitude x: the setting that sizes f
// is set to x, and so is the fault's length, which is the size itself or
// the time the size acts for: FaultDuration, or FaultDuration2 for the
// second fault of a pair (Own). This is the one translation from a
// fault's size to run settings: a search, a sweep and a shrink all go
// through it, and a caller that needs a longer strike (a sweep's delay
// lasting past its requests) lengthens FaultDuration afterwards.
func SetSize(c *scenario.Config, f Fault, x time.Duration) {
	x = max(x, 10*time.Millisecond)
	if Second(*c, f) {
		c.FaultDuration2 = scenario.Duration(x)
	} else {
		c.FaultDuration = scenario.Duration(x)
	}
	switch SizeSetting(f) {
	case "latency":
		c.Latency, c.Jitter = scenario.Duration(x), min(c.Jitter, scenario.Duration(x))
	case "clock-delta":
		c.ClockDelta = scenario.Duration(x)
	}
}

// SizeOf returns the magnitude of f that c sets: the value SetSize set.
func SizeOf(c scenario.Config, f Fault) time.Duration {
	c = Own(c, f)
	switch SizeSetting(f) {
	case "latency":
		return time.Duration(c.Latency)
	case "clock-delta":
		return time.Duration(c.ClockDelta)
	}
	return time.Duration(c.FaultDuration)
}

// SweepTarget is the target a sweep of f aims at in a design with the
// given server roles, or "" for the fault's default.
func SweepTarget(f Fault, roles []string) string {
	t := f.Traits()
	if t.Size.Target != TargetLockServers {
		return t.Size.Target
	}
	if slices.Contains(roles, cluster.RolePrimary) {
		return cluster.RolePrimary
	}
	return cluster.RoleLock
}

// checkTraits says what a registered fault's traits lack, or nil.
func checkTraits(f Fault) error {
	t := f.Traits()
	switch {
	case !reflect.TypeOf(f).Comparable():
		// Searches tell faults apart with ==; register a pointer.
		return fmt.Errorf("fault %s: its type is not comparable", f.Name())
	case t.Aim == "":
		return fmt.Errorf("fault %s: Traits.Aim is empty", f.Name())
	case t.Targets == 0 && t.Target != "" || t.Targets != 0 && t.Target == "":
		return fmt.Errorf("fault %s: Traits.Targets and Target go together", f.Name())
	case t.Aim == history.AimLinks && !t.Links:
		return fmt.Errorf("fault %s aims at links but says it never acts on them", f.Name())
	case t.Net != NetAny && !t.Links:
		return fmt.Errorf("fault %s needs something of links but says it never acts on them", f.Name())
	case t.Inert && (t.Links || t.ServerClocks || t.Servers != ServersUntouched || t.Targets != 0 || t.Aim != history.AimLock):
		return fmt.Errorf("fault %s is inert but says it acts on something", f.Name())
	}
	if !slices.Contains(seizures, t.Seizes) {
		return fmt.Errorf("fault %s: unknown seizure %q (Traits.Seizes takes a Seize constant)", f.Name(), t.Seizes)
	}
	switch t.Size.Setting {
	case "", "latency", "clock-delta":
	default:
		return fmt.Errorf("fault %s: unknown size setting %q", f.Name(), t.Size.Setting)
	}
	if len(t.Size.Sweeps) > 0 && t.Size.Moment == "" {
		return fmt.Errorf("fault %s is swept but names no moment for its strikes", f.Name())
	}
	return nil
}
