package impls

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/seed"
)

func init() {
	versionBinaries := map[string]string{"redis-server": "redis-server", "initdb": "postgresql", "postgres": "postgresql"}
	Register(Design{
		Name: "redis-version-check",
		Description: "source S4's recommendation: the redis-single lock only saves wasted work; the data lives in " +
			"PostgreSQL and a write commits only if the row's version is still the one read (optimistic check)",
		GuardsWrites: true,
		Binaries:     versionBinaries,
		Roles:        []string{cluster.RoleLock, cluster.RoleResource},
		Deploy:       deployVersionCheck(true),
		New: func(cfg lock.Config) (lock.Lock, error) {
			lockCfg := cfg
			lockCfg.Nodes = cfg.Nodes[:1]
			return newVersionChecked(cfg, newRedisSingle(lockCfg, nodeClient(lockCfg), singleOpts{})), nil
		},
	})
	Register(Design{
		Name: "version-check",
		Description: "the optimistic version check of redis-version-check with no lock at all: every client works at " +
			"once and the database refuses all but one write of each version",
		GuardsWrites: true,
		Binaries:     map[string]string{"initdb": "postgresql", "postgres": "postgresql"},
		Roles:        []string{cluster.RoleResource},
		Deploy:       deployVersionCheck(false),
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newVersionChecked(cfg, &noLock{rng: seed.Stream(cfg.Seed, seed.Locks, cfg.Client), client: cfg.Client}), nil
		},
	})
}

// pgDataTable holds the protected counters, each with the version its
// optimistic writes compare.
const pgDataTable = `CREATE TABLE locktest_data (key text PRIMARY KEY, value bigint NOT NULL, version bigint NOT NULL)`

// deployVersionCheck starts the lock's Redis when withLock, then the
// data's PostgreSQL with its table; the data's server is the last node.
func deployVersionCheck(withLock bool) func(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error) {
	return func(ctx context.Context, c *cluster.Cluster, cfg lock.Config) (Deployment, error) {
		var d Deployment
		if withLock {
			node, err := c.StartRedis(ctx, "redis-0", cluster.RedisOptions{AOFAlways: cfg.Persist})
			if err != nil {
				return d, err
			}
			d.Nodes = append(d.Nodes, node)
		}
		pg, err := c.StartPostgres(ctx, "postgres-0")
		if err != nil {
			return d, err
		}
		pg.SetRole(cluster.RoleResource)
		d.Nodes = append(d.Nodes, pg)
		conn, err := pgx.Connect(ctx, cluster.PostgresURL(pg.Addr()))
		if err != nil {
			return d, fmt.Errorf("connect to %s: %w", pg.Name, err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, pgDataTable); err != nil {
			return d, fmt.Errorf("create the data table: %w", err)
		}
		return d, nil
	}
}

// versionChecked is a lock whose critical sections write the data only
// through an optimistic check: the write commits if the row's version is
// still the one this client read, so a holder whose lock lapsed (a pause,
// an expiry) cannot overwrite a newer value — its write is refused, which
// is wasted work, never a lost update. Correctness comes from the
// database; the lock, if any, only makes refusals rare.
type versionChecked struct {
	lock.Lock
	data pgSession
	// read is the version each key had when this client last read it.
	read map[string]int64
}

func newVersionChecked(cfg lock.Config, l lock.Lock) *versionChecked {
	dataCfg := cfg
	dataCfg.Nodes = cfg.Nodes[len(cfg.Nodes)-1:]
	return &versionChecked{Lock: l, data: pgSession{cfg: dataCfg}, read: map[string]int64{}}
}

// Commands counts the lock's commands only: the data's statements are the
// critical section's, which every design pays.
func (v *versionChecked) Commands() int64 {
	if cc, ok := v.Lock.(lock.CommandCounter); ok {
		return cc.Commands()
	}
	return 0
}

// Read returns the key's value and remembers its version for the write.
// Token 0 is the final read after the run; no read checks a token: the
// version is the guard.
func (v *versionChecked) Read(ctx context.Context, key string, _ int64) (int64, error) {
	var value, version int64
	err := v.data.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		err := c.QueryRow(ctx, `SELECT value, version FROM locktest_data WHERE key = $1`, key).Scan(&value, &version)
		if errors.Is(err, pgx.ErrNoRows) {
			value, version = 0, 0
			return nil
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	v.read[key] = version
	return value, nil
}

// Write commits value if the row still has the version Read saw (none: no
// row yet); otherwise it is refused, with no effect.
func (v *versionChecked) Write(ctx context.Context, key string, value, _ int64) error {
	seen, ok := v.read[key]
	if !ok {
		return lock.Definite(fmt.Errorf("write of %s before any read of it", key))
	}
	delete(v.read, key)
	tag, err := v.data.exec(ctx, `INSERT INTO locktest_data (key, value, version) VALUES ($1, $2, 1)
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, version = locktest_data.version + 1
		WHERE locktest_data.version = $3`, key, value, seen)
	switch {
	case err != nil:
		return err
	case tag.RowsAffected() == 0:
		return lock.ErrStale
	}
	return nil
}

func (v *versionChecked) Close() error { return errors.Join(v.Lock.Close(), v.data.Close()) }

// noLock grants every acquire at once: the version check alone.
type noLock struct {
	rng    *rand.Rand
	client int
	seq    int
}

func (n *noLock) Acquire(context.Context, string) (lock.Grant, error) {
	n.seq++
	return lock.Grant{Owner: fmt.Sprintf("c%d-%d-%x", n.client, n.seq, n.rng.Uint32())}, nil
}
func (n *noLock) Release(context.Context, string, lock.Grant) error { return nil }
func (n *noLock) Close() error                                      { return nil }
