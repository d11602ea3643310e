package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "zookeeper",
		Description: "3-node ZooKeeper: ephemeral-sequential znode, wait for the predecessor's deletion " +
			"(source S3); the session timeout is --ttl (no fencing)",
		Binaries: zooKeeperBinaries,
		Roles:    zooKeeperRoles,
		Deploy:   deployZooKeeper,
		New:      func(cfg lock.Config) (lock.Lock, error) { return newZooKeeper(cfg, zkOpts{}), nil },
	})
	Register(Design{
		Name:        "zookeeper-fenced",
		Description: "zookeeper plus the znode's sequence number as the fencing token, checked by the resource",
		Fenced:      true,
		Binaries:    zooKeeperBinaries,
		Roles:       zooKeeperRoles,
		Deploy:      deployZooKeeper,
		New:         func(cfg lock.Config) (lock.Lock, error) { return newZooKeeper(cfg, zkOpts{fenced: true}), nil },
	})
}

// zooKeeperBinaries: the server is Java; Debian's zookeeper package brings
// both the jars and a JRE.
var zooKeeperBinaries = map[string]string{"java": "zookeeper"}

// zooKeeperRoles are the ensemble's servers: one leader, two followers
// (which is which follows the ensemble's own elections).
var zooKeeperRoles = []string{cluster.RolePrimary, cluster.RoleReplica, cluster.RoleReplica}

func deployZooKeeper(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
	e, err := c.StartZooKeeper(ctx, len(zooKeeperRoles))
	if err != nil {
		return Deployment{}, err
	}
	return Deployment{Nodes: e.Nodes}, nil
}

// zkRoot holds one persistent znode per lock key; the contenders'
// ephemeral-sequential znodes are its children.
const zkRoot = "/locktest"

// zkOpts tell the ZooKeeper designs apart.
type zkOpts struct {
	fenced bool
	// herd: every waiter watches the lock's whole child list and re-reads
	// it on every change, instead of watching its predecessor alone.
	herd bool
}

// zooKeeper is the lock recipe of ZooKeeper's documentation: create an
// ephemeral-sequential znode under the lock's znode; whoever has the lowest
// sequence number holds the lock; everyone else waits for the deletion of
// the znode just before its own. The znode lives as long as the session:
// a client that is paused (or cut off) past the session timeout loses the
// lock without knowing, which is docs/anomalies.md row 16. The sequence number only
// grows, so it is a fencing token.
type zooKeeper struct {
	cfg  lock.Config
	opt  zkOpts
	rng  *rand.Rand
	conn *zk.Conn // nil after a session was abandoned
	// parents records lock znodes known to exist.
	parents map[string]bool
	// cmds counts requests sent and watch notifications received: the
	// load a design puts on the ensemble.
	cmds atomic.Int64
}

func newZooKeeper(cfg lock.Config, opt zkOpts) *zooKeeper {
	return &zooKeeper{cfg: cfg, opt: opt, parents: map[string]bool{},
		rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client)}
}

// Commands counts requests and watch notifications.
func (l *zooKeeper) Commands() int64 { return l.cmds.Load() }

// session returns the client's connection, opening a new session if the
// last one was abandoned. The library reconnects by itself, and after its
// session expired it starts a new one, whose znodes are not the old one's.
func (l *zooKeeper) session() (*zk.Conn, error) {
	if l.conn != nil {
		return l.conn, nil
	}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout(network, addr, min(timeout, l.cfg.IOTimeout))
	}
	conn, events, err := zk.Connect(l.cfg.Nodes, l.cfg.TTL, zk.WithDialer(dial), zk.WithLogInfo(false),
		zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, lock.Definite(fmt.Errorf("zookeeper: connect: %w", err))
	}
	go func() {
		for range events { // the library blocks if nobody reads them
		}
	}()
	l.conn = conn
	return conn, nil
}

// abandon closes the session after a request of unknown outcome: a znode
// it may have created dies with the session (at once if the close reaches
// the ensemble, after the session timeout if not), so no lost reply can
// leave the lock taken forever.
func (l *zooKeeper) abandon() {
	if l.conn != nil {
		go l.conn.Close()
		l.conn = nil
	}
}

// call runs one request with the I/O timeout. The library has no request
// timeout: a request waits, queued, until a connection carries it, so a
// timed-out request may still take effect later. zkErr classifies errors.
func (l *zooKeeper) call(ctx context.Context, f func(*zk.Conn) error) error {
	conn, err := l.session()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.IOTimeout)
	defer cancel()
	done := make(chan error, 1)
	l.cmds.Add(1)
	go func() { done <- f(conn) }()
	select {
	case err := <-done:
		return zkErr(err)
	case <-ctx.Done():
		return fmt.Errorf("zookeeper: no reply: %w", ctx.Err())
	}
}

// zkErr marks the errors the ensemble answered (no node, node exists,
// session expired, …) and requests never sent as definite; a connection
// lost with the request in flight is an unknown outcome.
func zkErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("zookeeper: %w", err)
	case errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists),
		errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNotEmpty),
		errors.Is(err, zk.ErrSessionMoved), errors.Is(err, zk.ErrBadArguments):
		return lock.Definite(fmt.Errorf("zookeeper: %w", err))
	}
	return fmt.Errorf("zookeeper: %w", err)
}

// ensureParent creates the lock's znode (and the root) if needed.
func (l *zooKeeper) ensureParent(ctx context.Context, parent string) error {
	if l.parents[parent] {
		return nil
	}
	for _, p := range []string{zkRoot, parent} {
		err := l.call(ctx, func(c *zk.Conn) error {
			_, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	l.parents[parent] = true
	return nil
}

func (l *zooKeeper) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.AcquireTimeout)
	defer cancel()
	parent := path.Join(zkRoot, key)
	if err := l.ensureParent(ctx, parent); err != nil {
		if lock.IsDefinite(err) {
			return lock.Grant{}, err // a persistent znode is no lock
		}
		return lock.Grant{}, lock.Definite(fmt.Errorf("create %s: %w", parent, err))
	}
	var me string
	err := l.call(ctx, func(c *zk.Conn) error {
		var err error
		me, err = c.Create(parent+"/lock-", []byte(fmt.Sprintf("c%d", l.cfg.Client)), zk.FlagEphemeral|zk.FlagSequence,
			zk.WorldACL(zk.PermAll))
		return err
	})
	if err != nil {
		if !lock.IsDefinite(err) {
			l.abandon()
		}
		return lock.Grant{}, fmt.Errorf("acquire: create: %w", err)
	}
	seq, err := zkSequence(me)
	if err != nil {
		return lock.Grant{}, err
	}
	for {
		granted, wait, err := l.turn(ctx, parent, path.Base(me))
		switch {
		case granted:
			g := lock.Grant{Owner: me, Validity: l.cfg.TTL}
			if l.opt.fenced {
				g.Token = seq
			}
			return g, nil
		case err != nil && lock.IsDefinite(err):
			// Our znode is gone: the session that owned it expired.
			return lock.Grant{}, err
		case err != nil:
			if !sleepCtx(ctx, l.cfg.RetryMin) {
				return lock.Grant{}, l.giveUp(me, err)
			}
			continue
		}
		select {
		case ev := <-wait:
			if ev.Type != zk.EventNotWatching {
				l.cmds.Add(1)
			}
		case <-ctx.Done():
			return lock.Grant{}, l.giveUp(me, nil)
		}
	}
}

// turn lists the contenders and says whether ours is first; if not, it
// returns the watch to wait on: the predecessor's znode, or (herd) the
// whole list.
func (l *zooKeeper) turn(ctx context.Context, parent, me string) (bool, <-chan zk.Event, error) {
	var children []string
	var wait <-chan zk.Event
	err := l.call(ctx, func(c *zk.Conn) error {
		var err error
		if l.opt.herd {
			children, _, wait, err = c.ChildrenW(parent)
		} else {
			children, _, err = c.Children(parent)
		}
		return err
	})
	if err != nil {
		return false, nil, err
	}
	slices.SortFunc(children, func(a, b string) int { return strings.Compare(zkSeqSuffix(a), zkSeqSuffix(b)) })
	i := slices.Index(children, me)
	switch {
	case i < 0:
		return false, nil, lock.Definite(fmt.Errorf("acquire: our znode %s is gone: the session expired", me))
	case i == 0:
		return true, nil, nil
	case l.opt.herd:
		return false, wait, nil
	}
	var exists bool
	err = l.call(ctx, func(c *zk.Conn) error {
		var err error
		exists, _, wait, err = c.ExistsW(path.Join(parent, children[i-1]))
		return err
	})
	if err != nil {
		return false, nil, err
	}
	if !exists {
		// Gone between the list and the watch: look again at once.
		closed := make(chan zk.Event, 1)
		closed <- zk.Event{Type: zk.EventNodeDeleted}
		return false, closed, nil
	}
	return false, wait, nil
}

// giveUp withdraws our znode when the deadline passed before our turn.
// If the delete's outcome is unknown, the znode may still be queued: the
// session is abandoned so that it cannot outlive us.
func (l *zooKeeper) giveUp(me string, last error) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.IOTimeout)
	defer cancel()
	err := l.call(ctx, func(c *zk.Conn) error { return c.Delete(me, -1) })
	switch {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return lock.ErrNotAcquired
	case lock.IsDefinite(err):
		// Answered, but not deleted: whether it will be our turn is
		// unknown to us; close the session so that it is not.
		l.abandon()
		return lock.ErrNotAcquired
	}
	l.abandon()
	return fmt.Errorf("acquire: deadline passed, withdrawing %s: %w", me, errors.Join(err, last))
}

func (l *zooKeeper) Release(ctx context.Context, key string, g lock.Grant) error {
	err := l.call(ctx, func(c *zk.Conn) error { return c.Delete(g.Owner, -1) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return lock.ErrNotHeld // the session expired and took the znode with it
	case !lock.IsDefinite(err):
		l.abandon() // the znode goes with the session
	}
	return fmt.Errorf("release: %w", err)
}

func (l *zooKeeper) Close() error {
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
	return nil
}

// zkSeqSuffix is the ten-digit sequence number ZooKeeper appends.
func zkSeqSuffix(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

// zkSequence parses a sequential znode's number: strictly increasing per
// lock znode, so a grant's number is a fencing token. It is shifted by one
// because the first znode's number is 0, and token 0 means "not fenced".
func zkSequence(p string) (int64, error) {
	n, err := strconv.ParseInt(zkSeqSuffix(path.Base(p)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("acquire: znode %s has no sequence number: %w", p, err)
	}
	return n + 1, nil
}

// sleepCtx sleeps d or until ctx ends, reporting whether it slept fully.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// quietZK drops the library's log lines: connection churn under faults is
// expected, and the worker's log is for the worker.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
