package cluster

import (
	"slices"
	"strconv"
	"time"
)

// Timeout is one kind of connection timeout a run can set on its lock
// servers. Under a partition the kernel makes (packets dropped, no reset),
// these decide whether and when a server ends the session of a client it
// no longer hears from, and with the session every lock it held (a
// PostgreSQL advisory lock, a MariaDB GET_LOCK) while the client may still
// believe it holds them. Each kind is one setting for every server, which
// each server spells in its own knobs (TimeoutKnobs): a user sweeps "the
// server's keepalive", not postgres's three keepalive settings and
// pgbouncer's four.
type Timeout int

const (
	// Keepalive: a connection silent this long is probed, then every
	// third of it (at least 1 s), and dropped after 3 unanswered probes,
	// about twice the value after the last packet. It is Redis's own rule
	// for its tcp-keepalive, applied to every server so that one value
	// means the same everywhere. Whole seconds.
	Keepalive Timeout = iota
	// UserTimeout is TCP_USER_TIMEOUT: how long data the server sent may
	// stay unacknowledged before its kernel drops the connection. Whole
	// milliseconds.
	UserTimeout
	// IdleTimeout: the server ends a session that sent nothing this long
	// (outside a transaction). Whole seconds.
	IdleTimeout
	// IOTimeout: how long the server waits for the rest of a request, or
	// for its reply to be taken, before it drops the connection. Whole
	// seconds.
	IOTimeout
)

// Timeouts are a run's server timeouts. A kind absent (or 0) leaves every
// server at its own default, which is what a run records then: no value
// locktest would invent.
type Timeouts map[Timeout]time.Duration

// Knob is one server setting a timeout becomes, as the server spells it.
type Knob struct{ Name, Value string }

func (k Knob) String() string { return k.Name + "=" + k.Value }

// timeoutServer is how one server takes the timeouts: the knobs of each
// kind it has, or why it has none.
type timeoutServer struct {
	knobs map[Timeout]func(time.Duration) []Knob
	// none says why the server has none of them.
	none string
}

func secs(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
func millis(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Millisecond), 10)
}

// keepaliveInterval is Redis's: a third of the idle time, at least 1 s.
func keepaliveInterval(d time.Duration) string { return secs(max(d/3, time.Second)) }

// keepaliveProbes is how many unanswered probes drop a connection.
const keepaliveProbes = "3"

// timeoutServers are the servers whose connections the timeouts govern,
// by binary as designs list them (impls.Design.Binaries). A binary not
// here (initdb, redis-sentinel) holds no lock session: it keeps its
// defaults and does not refuse a timeout.
var timeoutServers = map[string]timeoutServer{
	"postgres": {knobs: map[Timeout]func(time.Duration) []Knob{
		Keepalive: func(d time.Duration) []Knob {
			return []Knob{{"tcp_keepalives_idle", secs(d)}, {"tcp_keepalives_interval", keepaliveInterval(d)},
				{"tcp_keepalives_count", keepaliveProbes}}
		},
		UserTimeout: func(d time.Duration) []Knob { return []Knob{{"tcp_user_timeout", millis(d)}} },
		IdleTimeout: func(d time.Duration) []Knob { return []Knob{{"idle_session_timeout", millis(d)}} },
	}},
	"pgbouncer": {knobs: map[Timeout]func(time.Duration) []Knob{
		Keepalive: func(d time.Duration) []Knob {
			return []Knob{{"tcp_keepalive", "1"}, {"tcp_keepidle", secs(d)}, {"tcp_keepintvl", keepaliveInterval(d)},
				{"tcp_keepcnt", keepaliveProbes}}
		},
		UserTimeout: func(d time.Duration) []Knob { return []Knob{{"tcp_user_timeout", millis(d)}} },
		IdleTimeout: func(d time.Duration) []Knob { return []Knob{{"client_idle_timeout", secs(d)}} },
	}},
	"mariadbd": {knobs: map[Timeout]func(time.Duration) []Knob{
		Keepalive: func(d time.Duration) []Knob {
			return []Knob{{"tcp_keepalive_time", secs(d)}, {"tcp_keepalive_interval", keepaliveInterval(d)},
				{"tcp_keepalive_probes", keepaliveProbes}}
		},
		IdleTimeout: func(d time.Duration) []Knob { return []Knob{{"wait_timeout", secs(d)}} },
		IOTimeout: func(d time.Duration) []Knob {
			return []Knob{{"net_read_timeout", secs(d)}, {"net_write_timeout", secs(d)}}
		},
	}},
	"redis-server": {knobs: map[Timeout]func(time.Duration) []Knob{
		Keepalive:   func(d time.Duration) []Knob { return []Knob{{"tcp-keepalive", secs(d)}} },
		IdleTimeout: func(d time.Duration) []Knob { return []Knob{{"timeout", secs(d)}} },
	}},
	"etcd": {none: "a lock's lease ends at its TTL (--ttl) whatever its client's connection does"},
	"java": {none: "ZooKeeper ends a session at its session timeout, the lock's --ttl (between 0.4 s and 60 s, cluster/zookeeper.go)"},
}

// TimeoutServers returns the binaries among bins whose servers the
// timeouts concern, sorted.
func TimeoutServers(bins []string) []string {
	var out []string
	for _, b := range bins {
		if _, ok := timeoutServers[b]; ok {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// TimeoutUnsupported says why the server (a binary TimeoutServers
// returned) cannot take timeouts of kind k; "" if it can.
func TimeoutUnsupported(server string, k Timeout) string {
	s := timeoutServers[server]
	switch {
	case s.none != "":
		return s.none
	case s.knobs[k] == nil:
		return "it has no such setting"
	}
	return ""
}

// TimeoutKnobs returns the settings the server (a binary) gets for t, in
// kind order; none for a kind it lacks.
func TimeoutKnobs(server string, t Timeouts) []Knob {
	var out []Knob
	for _, k := range []Timeout{Keepalive, UserTimeout, IdleTimeout, IOTimeout} {
		if f := timeoutServers[server].knobs[k]; f != nil && t[k] > 0 {
			out = append(out, f(t[k])...)
		}
	}
	return out
}

// SetTimeouts gives the lock servers started from now on the timeouts t
// (their knobs, TimeoutKnobs); a restarted node keeps what it started
// with. The resource node is the checker's, not the lock's, and keeps its
// defaults.
func (c *Cluster) SetTimeouts(t Timeouts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeouts = t
}

// timeoutKnobs returns the knobs the cluster's timeouts give server.
func (c *Cluster) timeoutKnobs(server string) []Knob {
	c.mu.Lock()
	defer c.mu.Unlock()
	return TimeoutKnobs(server, c.timeouts)
}

// knobLines writes knobs as "name sep value" lines, the way a
// configuration file (redis.conf, pgbouncer.ini) takes them.
func knobLines(knobs []Knob, sep string) []string {
	out := make([]string, len(knobs))
	for i, k := range knobs {
		out[i] = k.Name + sep + k.Value
	}
	return out
}
