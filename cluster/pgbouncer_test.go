package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPgBouncer starts PostgreSQL and a PgBouncer in front of it through a
// link, found without /usr/sbin in PATH, and checks that a client reaches the server through the pool, that
// the pool does not run as root, and that it comes back after SIGKILL.
func TestPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real PostgreSQL and PgBouncer; run without -short")
	}
	// A user's PATH lacks /usr/sbin, where Debian puts pgbouncer.
	t.Setenv("PATH", "/usr/bin:/bin")
	c := New(t.TempDir())
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pg, err := c.StartPostgres(ctx, "postgres-0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Link(LinkName("pgbouncer-0", pg.Name), pg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.StartPgBouncer(ctx, "pgbouncer-0", l.Addr(), "transaction")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, PostgresURL(b.Addr())+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	err = conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	conn.Close(ctx)
	if err != nil || pid == 0 {
		t.Fatalf("a query through the pool: pid %d, %v", pid, err)
	}
	assertNotRoot(t, b)
	assertRestarts(ctx, t, b)
}
