package impls

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	Register(Design{
		Name: "postgres-advisory",
		Description: "PostgreSQL session advisory lock: pg_try_advisory_lock on the client's held connection, " +
			"pg_advisory_unlock to release; held while the connection lives, no TTL, no fencing",
		Binaries: map[string]string{"initdb": "postgresql", "postgres": "postgresql"},
		Roles:    []string{cluster.RoleLock},
		Deploy: func(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
			n, err := c.StartPostgres(ctx, "postgres-0")
			if err != nil {
				return Deployment{}, err
			}
			return Deployment{Nodes: []*cluster.Node{n}}, nil
		},
		New: func(cfg lock.Config) (lock.Lock, error) { return newPostgresAdvisory(cfg, ""), nil },
	})
}

// postgresAdvisory is the lock teams reach for when PostgreSQL is already
// there: a session-level advisory lock belongs to the connection that took
// it and lasts until that connection unlocks or closes. There is no lease:
// a paused holder keeps its connection, so nobody else gets in while it
// sleeps. What ends a holder's lock behind its back is the connection
// ending (a server restart, a dropped socket), and nothing tells the holder
// until its next statement.
type postgresAdvisory struct {
	pgSession
	rng *rand.Rand
	seq int
}

// newPostgresAdvisory builds a client; params are appended to its
// connection string (see pgSession).
func newPostgresAdvisory(cfg lock.Config, params string) *postgresAdvisory {
	return &postgresAdvisory{pgSession: pgSession{cfg: cfg, params: params}, rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client)}
}

// advisoryKey maps a lock name onto the bigint advisory-lock space.
func advisoryKey(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// query runs a statement that returns one boolean.
func (l *postgresAdvisory) query(ctx context.Context, sql string, key string) (bool, error) {
	var ok bool
	err := l.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, sql, advisoryKey(key)).Scan(&ok)
	})
	return ok, err
}

// Acquire polls pg_try_advisory_lock. A try whose reply was lost dropped
// the connection, and with it any lock that try took, once the server
// notices; still, until then it is an unknown outcome.
func (l *postgresAdvisory) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	l.seq++
	owner := fmt.Sprintf("c%d-%d-%x", l.cfg.Client, l.seq, l.rng.Uint32())
	return acquireLoop(ctx, l.cfg, l.rng, func(ctx context.Context) (lock.Grant, tryResult, error) {
		got, err := l.query(ctx, `SELECT pg_try_advisory_lock($1)`, key)
		return sessionTry(err == nil && got, err, owner)
	})
}

// Release unlocks on the connection that locked. false from the server
// means this session did not hold it: its connection ended since.
func (l *postgresAdvisory) Release(ctx context.Context, key string, _ lock.Grant) error {
	released, err := l.query(ctx, `SELECT pg_advisory_unlock($1)`, key)
	switch {
	case err != nil:
		return fmt.Errorf("release: %w", err)
	case !released:
		return lock.ErrNotHeld
	}
	return nil
}
