package impls

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "mariadb-getlock",
		Description: "MariaDB named lock: GET_LOCK(key, 0) polled on the client's held connection, RELEASE_LOCK " +
			"to release; held while the connection lives, no TTL, no fencing",
		Binaries: map[string]string{"mariadb-install-db": "mariadb-server", "mariadbd": "mariadb-server"},
		Roles:    []string{cluster.RoleLock},
		Deploy: func(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
			n, err := c.StartMariaDB(ctx, "mariadb-0")
			if err != nil {
				return Deployment{}, err
			}
			return Deployment{Nodes: []*cluster.Node{n}}, nil
		},
		New: newMariaDBGetLock,
	})
}

// mariadbGetLock is MySQL's and MariaDB's user-level lock, the one Rails'
// MySQL adapter takes around migrations and django-mysql's Lock wraps: GET_LOCK
// names a lock that belongs to the connection that took it, until
// RELEASE_LOCK on that connection or the connection's end. Like
// postgres-advisory it has no lease, so a paused holder keeps it; what
// ends a lock behind its holder's back is the server ending the session (a
// restart, a reset connection), which the holder learns only at its next
// statement.
type mariadbGetLock struct {
	cfg lock.Config
	rng *rand.Rand
	seq int
	// db lends conn; it keeps no idle connection, so a conn that is let go
	// is closed, and with it any lock its session held.
	db   *sql.DB
	conn *sql.Conn // nil until connected, and after a connection broke
	cmds atomic.Int64
}

func newMariaDBGetLock(cfg lock.Config) (lock.Lock, error) {
	// interpolateParams: one round trip per statement instead of a
	// server-side prepare, execute and close.
	db, err := sql.Open("mysql", cluster.MariaDBDSN(cfg.Nodes[0])+"?interpolateParams=true")
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	db.SetMaxIdleConns(0)
	return &mariadbGetLock{cfg: cfg, rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client), db: db}, nil
}

// Commands counts the SQL statements sent.
func (l *mariadbGetLock) Commands() int64 { return l.cmds.Load() }

// query runs a statement returning one integer, NULL as not valid, with
// the I/O timeout, on the held connection (connecting first if needed). A
// statement the server refused, or one that never left the client, is a
// definite failure; anything else (a timeout, a connection lost
// mid-statement) is an unknown outcome, and the connection is let go:
// after a cancelled statement it is closed.
func (l *mariadbGetLock) query(ctx context.Context, stmt, key string) (sql.NullInt64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.IOTimeout)
	defer cancel()
	var v sql.NullInt64
	if l.conn == nil {
		conn, err := l.db.Conn(ctx)
		if err != nil {
			return v, lock.Definite(fmt.Errorf("mariadb: connect: %w", err))
		}
		l.conn = conn
	}
	l.cmds.Add(1)
	err := l.conn.QueryRowContext(ctx, stmt, key).Scan(&v)
	var myErr *mysql.MySQLError
	switch {
	case err == nil:
		return v, nil
	case errors.As(err, &myErr):
		return v, lock.Definite(fmt.Errorf("mariadb: %w", err))
	}
	l.drop()
	if errors.Is(err, driver.ErrBadConn) {
		return v, lock.Definite(fmt.Errorf("mariadb: not sent: %w", err))
	}
	return v, fmt.Errorf("mariadb: %w", err)
}

func (l *mariadbGetLock) drop() {
	if l.conn != nil {
		_ = l.conn.Close()
		l.conn = nil
	}
}

// Acquire polls GET_LOCK with a zero timeout: 1 granted, 0 held by another
// session, NULL an error on the server's side (not granted). A try whose
// reply was lost let its connection go, which frees anything it took once
// the server notices; until then it is an unknown outcome.
func (l *mariadbGetLock) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	l.seq++
	owner := fmt.Sprintf("c%d-%d-%x", l.cfg.Client, l.seq, l.rng.Uint32())
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		got, err := l.query(ctx, `SELECT GET_LOCK(?, 0)`, key)
		return sessionTry(err == nil && got.Valid && got.Int64 == 1, err, owner)
	})
}

// Release runs RELEASE_LOCK on the connection that locked: 1 released; 0
// (another session holds it) or NULL (nobody does) mean this session had
// lost it: its connection ended since.
func (l *mariadbGetLock) Release(ctx context.Context, key string, _ lock.Grant) error {
	released, err := l.query(ctx, `SELECT RELEASE_LOCK(?)`, key)
	switch {
	case err != nil:
		return fmt.Errorf("release: %w", err)
	case !released.Valid || released.Int64 != 1:
		return lock.ErrNotHeld
	}
	return nil
}

func (l *mariadbGetLock) Close() error {
	l.drop()
	return l.db.Close()
}
