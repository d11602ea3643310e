package cluster

import (
	"context"
	"fmt"
	"time"
)

// SessionsTimeout bounds one question about a server's sessions: a paused
// or cut-off server must not stall the sampler that asks every second.
const SessionsTimeout = 500 * time.Millisecond

// sessionCounter is how a server kind counts its clients' sessions, as
// the server itself sees them. Each kind sets its own where it makes its
// nodes (redis.go, etcd.go, zookeeper.go, postgres.go): the count is the
// server's word, which the connections on its port cannot give where a
// session outlives its connection (an etcd lease) or a pool keeps
// connections without sessions.
type sessionCounter struct {
	// what names what is counted, for people: "connected clients".
	what string
	// count asks the server at addr. It must not count its own question.
	count func(ctx context.Context, addr string) (int, error)
	// shared: every member answers for the whole cluster (etcd's leases
	// are replicated), so one member is asked, not each.
	shared bool
}

// CountsSessions says whether the node's server can count its sessions,
// what it counts, and whether the count is the whole cluster's (asked of
// one member, not of each).
func (n *Node) CountsSessions() (what string, shared, ok bool) {
	if n.sessions == nil {
		return "", false, false
	}
	return n.sessions.what, n.sessions.shared, true
}

// Sessions asks the node's server how many client sessions it holds now
// (see CountsSessions), within SessionsTimeout.
func (n *Node) Sessions(ctx context.Context) (int, error) {
	if n.sessions == nil {
		return 0, fmt.Errorf("%s: a %s server does not count its sessions here", n.Name, n.Kind)
	}
	ctx, cancel := context.WithTimeout(ctx, SessionsTimeout)
	defer cancel()
	c, err := n.sessions.count(ctx, n.Addr())
	if err != nil {
		return 0, fmt.Errorf("%s: count %s: %w", n.Name, n.sessions.what, err)
	}
	return c, nil
}
