package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "postgres-unique",
		Description: "PostgreSQL: INSERT a row under a unique key to acquire, DELETE it to release, no expiry " +
			"(source S2): a crashed holder keeps the lock forever",
		Binaries: map[string]string{"initdb": "postgresql", "postgres": "postgresql"},
		Roles:    []string{cluster.RoleLock},
		Deploy:   deployPostgres,
		New:      func(cfg lock.Config) (lock.Lock, error) { return newPostgresUnique(cfg), nil },
	})
}

// pgLockTable: the primary key is the unique index that makes a second
// INSERT of the same key fail.
const pgLockTable = `CREATE TABLE locktest_locks (key text PRIMARY KEY, owner text NOT NULL)`

func deployPostgres(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
	n, err := c.StartPostgres(ctx, "postgres-0")
	if err != nil {
		return Deployment{}, err
	}
	conn, err := pgx.Connect(ctx, cluster.PostgresURL(n.Addr()))
	if err != nil {
		return Deployment{}, fmt.Errorf("connect to %s: %w", n.Name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, pgLockTable); err != nil {
		return Deployment{}, fmt.Errorf("create the lock table: %w", err)
	}
	return Deployment{Nodes: []*cluster.Node{n}}, nil
}

// postgresUnique is source S2's SQL lock: the row is the lock, the unique
// index refuses a second holder, and nothing ever removes the row but its
// owner's DELETE. Mutual exclusion holds whatever happens to the clients;
// liveness does not: a holder that dies holding the lock keeps it for good
// (docs/anomalies.md row 17).
type postgresUnique struct {
	pgSession
	rng *rand.Rand
	seq int
}

func newPostgresUnique(cfg lock.Config) *postgresUnique {
	return &postgresUnique{pgSession: pgSession{cfg: cfg}, rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client)}
}

// pgSession is a client's one connection to PostgreSQL, opened on first
// use and dropped after any error that leaves it unusable.
type pgSession struct {
	cfg lock.Config
	// params are appended to the connection string: what the client must
	// set to speak through a pooler (see postgres-advisory-pgbouncer).
	params string
	conn   *pgx.Conn // nil until connected, and after a connection broke
	cmds   atomic.Int64
}

// Commands counts the SQL statements sent.
func (l *pgSession) Commands() int64 { return l.cmds.Load() }

// exec runs one statement with the I/O timeout on the client's connection.
func (l *pgSession) exec(ctx context.Context, sql string, args ...any) (tag pgconn.CommandTag, err error) {
	err = l.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		tag, err = c.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// do runs one statement, fn, with the I/O timeout on the client's
// connection, connecting first if needed. A statement the server refused,
// or one that never left the client, is a definite failure; anything else
// (a timeout, a connection lost mid-statement) is an unknown outcome, and
// the connection is dropped: after a cancelled statement it is not usable.
func (l *pgSession) do(ctx context.Context, fn func(ctx context.Context, c *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.IOTimeout)
	defer cancel()
	if l.conn == nil {
		conn, err := pgx.Connect(ctx, cluster.PostgresURL(l.cfg.Nodes[0])+l.params)
		if err != nil {
			return lock.Definite(fmt.Errorf("postgres: connect: %w", err))
		}
		l.conn = conn
	}
	l.cmds.Add(1)
	err := fn(ctx, l.conn)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pgErr):
		return lock.Definite(fmt.Errorf("postgres: %w", err))
	}
	l.drop()
	if pgconn.SafeToRetry(err) {
		return lock.Definite(fmt.Errorf("postgres: not sent: %w", err))
	}
	return fmt.Errorf("postgres: %w", err)
}

func (l *pgSession) drop() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.IOTimeout)
		defer cancel()
		_ = l.conn.Close(ctx)
		l.conn = nil
	}
}

func (l *pgSession) Close() error {
	l.drop()
	return nil
}

func (l *postgresUnique) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	l.seq++
	owner := fmt.Sprintf("c%d-%d-%x", l.cfg.Client, l.seq, l.rng.Uint32())
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		_, err := l.exec(ctx, `INSERT INTO locktest_locks (key, owner) VALUES ($1, $2)`, key, owner)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return lock.Grant{Owner: owner}, tryGranted, nil
		case errors.As(err, &pgErr) && pgErr.Code == "23505": // unique_violation: held
			// Unless an earlier try whose reply we lost inserted our row.
			tag, err := l.exec(ctx, `SELECT 1 FROM locktest_locks WHERE key = $1 AND owner = $2`, key, owner)
			switch {
			case err != nil:
				return lock.Grant{}, tryUnknown, err
			case tag.RowsAffected() == 1:
				return lock.Grant{Owner: owner}, tryGranted, nil
			}
			return lock.Grant{}, tryRefused, nil
		case lock.IsDefinite(err):
			return lock.Grant{}, tryRefused, err
		}
		return lock.Grant{}, tryUnknown, err
	})
}

func (l *postgresUnique) Release(ctx context.Context, key string, g lock.Grant) error {
	tag, err := l.exec(ctx, `DELETE FROM locktest_locks WHERE key = $1 AND owner = $2`, key, g.Owner)
	switch {
	case err != nil:
		return fmt.Errorf("release: %w", err)
	case tag.RowsAffected() == 0:
		return lock.ErrNotHeld
	}
	return nil
}
