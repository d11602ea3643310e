package history

import (
	"regexp"
	"strconv"
)

// Aim is whom a fault strikes. Each fault declares it (faults.Traits) and
// the run writes it on every fault-start, so that judging what a strike
// did needs the history alone: a stored run is analyzed by any locktest,
// and a fault added or renamed is judged by what it does, not its name.
type Aim string

const (
	// AimHolder: one client process and the lease it holds (a pause, a
	// kill, a skewed clock); judged by whether another client was granted
	// that lease while the client still believed it held it.
	AimHolder Aim = "holder"
	// AimWaiter: one client inside its acquire; judged by whether another
	// client was granted the key while that acquire was stopped.
	AimWaiter Aim = "waiter"
	// AimWrite: one client's writes to the protected resource; judged by
	// whether a delayed write landed after another client's grant.
	AimWrite Aim = "write"
	// AimServers, AimLinks and AimClocks strike servers, the links to and
	// between them, or the servers' clocks; AimLock the lock as a whole.
	// All four are judged by what happened to the lock: two clients
	// believing they held one key during the fault or within a TTL after.
	AimServers Aim = "servers"
	AimLinks   Aim = "links"
	AimClocks  Aim = "clocks"
	AimLock    Aim = "lock"
)

// OnClient reports whether the aim is one client, named by the fault's
// target (ClientIn).
func (a Aim) OnClient() bool { return a == AimHolder || a == AimWaiter || a == AimWrite }

// clientPrefix is how a client is named everywhere: worker logs, link
// ends ("c3" of link c3:redis-0), fault targets ("c3", "c3 +2s ×1" of a
// skewed clock, "c3:resource" of a delayed write).
var clientPrefix = regexp.MustCompile(`^c(\d+)`)

// ClientName is client i's name.
func ClientName(i int) string { return "c" + strconv.Itoa(i) }

// ClientIn returns the client that s names at its start ("c3", "c3 +2s",
// "c3:resource"), and the rest of s after the name; ok is false when s
// names no client.
func ClientIn(s string) (client int, rest string, ok bool) {
	m := clientPrefix.FindStringSubmatchIndex(s)
	if m == nil {
		return 0, "", false
	}
	c, err := strconv.Atoi(s[m[2]:m[3]])
	if err != nil {
		return 0, "", false
	}
	return c, s[m[1]:], true
}

// IsClient reports whether s is exactly a client's name ("c3").
func IsClient(s string) bool {
	_, rest, ok := ClientIn(s)
	return ok && rest == ""
}
