package cluster

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// PostgresUser is the database user of a PostgreSQL node (trusted on
// loopback, no password), and PostgresOSUser the system user its programs
// run as when the coordinator is root: initdb and postgres refuse root.
const (
	PostgresUser   = "locktest"
	PostgresOSUser = "postgres"
)

// postgresConfig suits a server that lives for one test run: no fsync (a
// killed server still keeps what the kernel has; only a machine crash
// would lose it), TCP on loopback only and no Unix socket (a run
// directory's path may exceed a socket path's 107 bytes), small memory,
// and every log line on stderr, which is the node's log.
var postgresConfig = []string{
	"fsync=off", "synchronous_commit=off", "full_page_writes=off",
	"unix_socket_directories=",
	"shared_buffers=16MB", "max_connections=50",
	"logging_collector=off", "log_destination=stderr",
}

// PostgresBinaries checks that initdb and postgres are installed.
func PostgresBinaries() (initdb, postgres string, err error) {
	if initdb, err = LookBinary("initdb", "postgresql"); err != nil {
		return "", "", err
	}
	if postgres, err = LookBinary("postgres", "postgresql"); err != nil {
		return "", "", err
	}
	return initdb, postgres, nil
}

// StartPostgres creates a database cluster with initdb in the node's
// directory and starts postgres on a free loopback port. Under root both
// run as PostgresOSUser, who gets the node's directory.
func (c *Cluster) StartPostgres(ctx context.Context, name string) (*Node, error) {
	initdb, postgres, err := PostgresBinaries()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, name)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := chownToRunAs(dir, PostgresOSUser); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "initdb.log"))
	if err != nil {
		return nil, fmt.Errorf("create initdb log: %w", err)
	}
	defer logf.Close()
	p, err := Start(Spec{Name: name + "-initdb", Path: initdb, Dir: dir, Log: logf, RunAs: PostgresOSUser,
		Args: []string{"-D", data, "-U", PostgresUser, "--auth=trust", "--no-sync", "--no-instructions",
			"--encoding=UTF8", "--locale=C"}})
	if err != nil {
		return nil, err
	}
	if err := p.Wait(ctx); err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("initdb for %s failed (see %s): %w", name, logf.Name(), err)
	}
	if c.backend.BindHost() != "127.0.0.1" {
		// In a container clients come from the run's network, not
		// loopback: trust them too (nothing else is on that network).
		hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("pg_hba.conf of %s: %w", name, err)
		}
		_, err = hba.WriteString("host all all 0.0.0.0/0 trust\n")
		hba.Close()
		if err != nil {
			return nil, fmt.Errorf("pg_hba.conf of %s: %w", name, err)
		}
	}
	n := &Node{Name: name, Kind: "postgres", ready: pingPostgres}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	n.Port = port
	args := []string{"-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=" + c.backend.BindHost()}
	for _, kv := range postgresConfig {
		args = append(args, "-c", kv)
	}
	n.spec = Spec{Path: postgres, Args: args, RunAs: PostgresOSUser}
	if err := c.add(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// chownToRunAs gives dir to the user a child will run as (see Spec.RunAs).
func chownToRunAs(dir, name string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("user %s (created by the Debian package of the server): %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("give %s to %s: %w", dir, name, err)
	}
	return nil
}

// PostgresURL is the connection string for the node's database at addr
// (the node itself, or a link to it).
func PostgresURL(addr string) string {
	return fmt.Sprintf("postgres://%s@%s/postgres?sslmode=disable", PostgresUser, addr)
}

// pingPostgres answers nil once the server accepts a session and runs a
// query: it has finished start-up or crash recovery.
func pingPostgres(ctx context.Context, addr string) error {
	conn, err := pgx.Connect(ctx, PostgresURL(addr))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// pgVersion is the major version in a /usr/lib/postgresql/VERSION/… path.
func pgVersion(path string) int {
	rest, ok := strings.CutPrefix(path, "/usr/lib/postgresql/")
	if !ok {
		return 0
	}
	v, _ := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
	return v
}
