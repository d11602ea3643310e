package impls

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "memcached",
		Description: "one memcached: add key owner with an expiry of --ttl rounded up to whole seconds, release by a " +
			"compare-and-delete on the item's CAS (meta commands); a cache, which evicts when full",
		Binaries:   map[string]string{"memcached": "memcached"},
		Roles:      []string{cluster.RoleLock},
		Deploy:     deployMemcached,
		PlainNodes: true,
		New:        newMemcached,
	})
}

func deployMemcached(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
	n, err := c.StartMemcached(ctx, "memcached-0")
	if err != nil {
		return Deployment{}, err
	}
	return Deployment{Nodes: []*cluster.Node{n}}, nil
}

// memcachedLock takes the lock with add, memcached's set-if-absent. Its
// expiry is in whole seconds, and memcached's clock ticks once a second,
// so a key added with 1 s lives between 0 and 1 s: the lease is shorter
// than asked by up to a second, which the grant's validity says.
type memcachedLock struct {
	cfg  lock.Config
	conn *memcachedConn
	rng  *rand.Rand
	seq  int
	*commandCount
}

func newMemcached(cfg lock.Config) (lock.Lock, error) {
	return &memcachedLock{cfg: cfg, conn: &memcachedConn{addr: cfg.Nodes[0], timeout: cfg.IOTimeout},
		rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client), commandCount: &commandCount{}}, nil
}

// expiry is the TTL in memcached's whole seconds, rounded up.
func (l *memcachedLock) expiry() int { return int(math.Ceil(l.cfg.TTL.Seconds())) }

func (l *memcachedLock) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	l.seq++
	owner := fmt.Sprintf("c%d-%d-%x", l.cfg.Client, l.seq, l.rng.Uint32())
	start := l.cfg.Clock.Now()
	uncertain := false
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		granted := func() (lock.Grant, tryResult, error) {
			// The item's clock may tick right after the add.
			valid := time.Duration(l.expiry()-1)*time.Second - l.cfg.Clock.Now().Sub(start)
			return lock.Grant{Owner: owner, Validity: valid}, tryGranted, nil
		}
		if uncertain {
			// An earlier add whose reply was lost may have taken it.
			v, _, found, err := l.get(ctx, key)
			if err != nil {
				return lock.Grant{}, tryUnknown, err
			}
			if found && v == owner {
				return granted()
			}
		}
		reply, err := l.do(ctx, fmt.Sprintf("add %s 0 %d %d\r\n%s", key, l.expiry(), len(owner), owner))
		switch {
		case err != nil:
			uncertain = true
			return lock.Grant{}, tryUnknown, err
		case reply == "NOT_STORED":
			return lock.Grant{}, tryRefused, nil
		case reply != "STORED":
			return lock.Grant{}, tryUnknown, fmt.Errorf("add answered %q", reply)
		}
		return granted()
	})
}

func (l *memcachedLock) Release(ctx context.Context, key string, g lock.Grant) error {
	v, cas, found, err := l.get(ctx, key)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if !found || v != g.Owner {
		return lock.ErrNotHeld
	}
	// Deleted only if the item is still the one read: md with its CAS.
	reply, err := l.do(ctx, fmt.Sprintf("md %s C%d", key, cas))
	switch {
	case err != nil:
		return fmt.Errorf("release: %w", err)
	case reply == "HD":
		return nil
	case reply == "NF" || reply == "EX":
		return lock.ErrNotHeld
	}
	return fmt.Errorf("release: md answered %q", reply)
}

// get reads key's value and CAS (mg with v and c).
func (l *memcachedLock) get(ctx context.Context, key string) (value string, cas uint64, found bool, err error) {
	reply, err := l.do(ctx, "mg "+key+" v c")
	if err != nil || reply == "EN" {
		return "", 0, false, err
	}
	// VA <size> c<cas>, then the value on its own line (read by do).
	head, value, _ := strings.Cut(reply, "\n")
	for _, f := range strings.Fields(head)[2:] {
		if _, err := fmt.Sscanf(f, "c%d", &cas); err == nil {
			return value, cas, true, nil
		}
	}
	return "", 0, false, fmt.Errorf("mg answered %q", reply)
}

func (l *memcachedLock) do(ctx context.Context, cmd string) (string, error) {
	l.n.Add(1)
	return l.conn.do(ctx, cmd)
}

func (l *memcachedLock) Close() error { return l.conn.close() }

// memcachedConn is one connection speaking memcached's text protocol, one
// command at a time: the few commands a lock needs, with a deadline on
// each. A connection that failed mid-command is dropped, since a reply may
// still be on its way.
type memcachedConn struct {
	addr    string
	timeout time.Duration
	c       net.Conn
	r       *bufio.Reader
}

// do sends cmd and returns the reply's first line, and for a VA reply the
// value as a second line.
func (m *memcachedConn) do(ctx context.Context, cmd string) (string, error) {
	if m.c == nil {
		d := net.Dialer{Timeout: m.timeout}
		c, err := d.DialContext(ctx, "tcp", m.addr)
		if err != nil {
			return "", err
		}
		m.c, m.r = c, bufio.NewReader(c)
	}
	deadline := time.Now().Add(m.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	reply, err := m.exchange(cmd, deadline)
	if err != nil {
		_ = m.close()
	}
	return reply, err
}

func (m *memcachedConn) exchange(cmd string, deadline time.Time) (string, error) {
	if err := m.c.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := m.c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	line, err := m.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "VA ") {
		value, err := m.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line += "\n" + strings.TrimRight(value, "\r\n")
	}
	if strings.HasPrefix(line, "SERVER_ERROR") || strings.HasPrefix(line, "CLIENT_ERROR") || line == "ERROR" {
		return "", errors.New("memcached: " + line)
	}
	return line, nil
}

func (m *memcachedConn) close() error {
	if m.c == nil {
		return nil
	}
	err := m.c.Close()
	m.c, m.r = nil, nil
	return err
}
