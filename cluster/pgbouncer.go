package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// pgbouncerBinary checks that pgbouncer is installed.
func pgbouncerBinary() (string, error) { return LookBinary("pgbouncer", "pgbouncer") }

// StartPgBouncer starts a PgBouncer on a free loopback port in front of the
// PostgreSQL at upstream (a node, or a link to one), serving its database
// "postgres" to PostgresUser under the pool mode given ("session",
// "transaction" or "statement"). Clients connect with PostgresURL, as to
// the server itself. Under root it runs as PostgresOSUser: pgbouncer
// refuses root.
//
// Its settings are the defaults but for two that suit a run of seconds:
// no Unix socket (a run directory's path may exceed a socket path's 107
// bytes) and server_login_retry of 1 s instead of 15, so that after the
// server restarts (kill-node) the pool logs in again within the run; and
// the run's timeouts (SetTimeouts).
func (c *Cluster) StartPgBouncer(ctx context.Context, name, upstream, poolMode string) (*Node, error) {
	bin, err := pgbouncerBinary()
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer %s: upstream %q: %w", name, upstream, err)
	}
	n := &Node{Name: name, Kind: "pgbouncer", ready: pingPostgres}
	if n.Port, err = FreePort(); err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	// trust still needs the user listed in the auth file.
	users := filepath.Join(dir, "userlist.txt")
	if err := os.WriteFile(users, []byte(fmt.Sprintf("%q \"\"\n", PostgresUser)), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", users, err)
	}
	conf := []string{
		"[databases]",
		fmt.Sprintf("postgres = host=%s port=%s dbname=postgres user=%s", host, port, PostgresUser),
		"[pgbouncer]",
		"listen_addr = " + c.backend.BindHost(),
		fmt.Sprintf("listen_port = %d", n.Port),
		"unix_socket_dir =",
		"auth_type = trust",
		"auth_file = " + users,
		// Its console (database pgbouncer) answers SHOW CONFIG: what the
		// pool runs with can be asked, as of the server.
		"admin_users = " + PostgresUser,
		"pool_mode = " + poolMode,
		"server_login_retry = 1",
	}
	conf = append(conf, knobLines(c.timeoutKnobs("pgbouncer"), " = ")...)
	confPath := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", confPath, err)
	}
	n.spec = Spec{Path: bin, Args: []string{confPath}, RunAs: PostgresOSUser}
	if err := c.add(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}
