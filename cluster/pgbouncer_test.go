package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPgBouncer starts PostgreSQL and a PgBouncer in front of it through a
// link, found without /usr/sbin in PATH, and checks that a client reaches the server through the pool, that
// the pool does not run as root, that it comes back after SIGKILL, and
// that both run with the run's timeouts (the pool after its restart too).
func TestPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real PostgreSQL and PgBouncer; run without -short")
	}
	// A user's PATH lacks /usr/sbin, where Debian puts pgbouncer.
	t.Setenv("PATH", "/usr/bin:/bin")
	c := New(t.TempDir())
	defer c.Stop()
	c.SetTimeouts(testTimeouts)
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
	assertPostgresTimeouts(ctx, t, pg)
	assertPgBouncerTimeouts(ctx, t, b)
}

// testTimeouts sets every kind of timeout, each to a value no server has
// by default, so that a server found with it took the run's.
var testTimeouts = Timeouts{Keepalive: 7 * time.Second, UserTimeout: 2500 * time.Millisecond,
	IdleTimeout: 61 * time.Second, IOTimeout: 13 * time.Second}

// assertPostgresTimeouts fails unless the server's settings are the knobs
// testTimeouts gives it.
func assertPostgresTimeouts(ctx context.Context, t *testing.T, pg *Node) {
	t.Helper()
	conn, err := pgx.Connect(ctx, PostgresURL(pg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// SHOW gives a value with its unit: ask pg_settings for the number.
	for _, k := range TimeoutKnobs("postgres", testTimeouts) {
		var got string
		if err := conn.QueryRow(ctx, "SELECT setting FROM pg_settings WHERE name = $1", k.Name).Scan(&got); err != nil {
			t.Fatalf("postgres %s: %v", k.Name, err)
		}
		if got != k.Value {
			t.Errorf("postgres %s = %s, want %s", k.Name, got, k.Value)
		}
	}
}

// assertPgBouncerTimeouts fails unless the pool's console shows the knobs
// testTimeouts gives it.
func assertPgBouncerTimeouts(ctx context.Context, t *testing.T, b *Node) {
	t.Helper()
	console, err := pgx.Connect(ctx, "postgres://"+PostgresUser+"@"+b.Addr()+"/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close(ctx)
	rows, err := console.Query(ctx, "SHOW CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	config := map[string]string{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		config[fmt.Sprint(vals[0])] = fmt.Sprint(vals[1])
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range TimeoutKnobs("pgbouncer", testTimeouts) {
		if got := config[k.Name]; got != k.Value {
			t.Errorf("pgbouncer %s = %q, want %s", k.Name, got, k.Value)
		}
	}
}
