package impls

import (
	"context"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Design{
		Name: "postgres-advisory-pgbouncer",
		Description: "postgres-advisory through a PgBouncer in transaction pooling mode: each statement may run on " +
			"another server session, so the lock is taken on one backend and the unlock may land on another",
		Binaries: map[string]string{"initdb": "postgresql", "postgres": "postgresql", "pgbouncer": "pgbouncer"},
		Roles:    []string{cluster.RoleLock, cluster.RoleLock},
		Deploy:   deployPgBouncer,
		// pgx's default caches named prepared statements, which PgBouncer
		// 1.18 cannot carry across server sessions in transaction mode;
		// the simple protocol is what pgx's documentation prescribes there.
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newPostgresAdvisory(cfg, "&default_query_exec_mode=simple_protocol"), nil
		},
	})
}

// deployPgBouncer starts PostgreSQL, then a PgBouncer in transaction
// pooling mode that reaches it through a link, so that partitions and
// resets can hit the pool's server connections as well as the clients'.
// Clients dial the PgBouncer only.
//
// This is the setup behind goauthentik #23876 and pgbouncer #102: a
// session-level advisory lock belongs to the server session that ran
// pg_try_advisory_lock, which in transaction mode is whichever backend the
// pool lent the client for that one statement. The unlock may be served by
// another backend, which answers false and leaves the lock held by a
// session nobody owns; and since a session may take its own advisory lock
// again, any client lent that backend later is granted the lock too.
func deployPgBouncer(ctx context.Context, c *cluster.Cluster, _ lock.Config) (Deployment, error) {
	pg, err := c.StartPostgres(ctx, "postgres-0")
	if err != nil {
		return Deployment{}, err
	}
	l, err := c.Link(cluster.LinkName("pgbouncer-0", pg.Name), pg.Addr())
	if err != nil {
		return Deployment{}, err
	}
	b, err := c.StartPgBouncer(ctx, "pgbouncer-0", l.Addr(), "transaction")
	if err != nil {
		return Deployment{}, err
	}
	return Deployment{Nodes: []*cluster.Node{b}}, nil
}
