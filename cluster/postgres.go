package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
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
// would lose it), but a commit is acknowledged only once its WAL is
// written to the kernel (synchronous_commit on, the default): with it off,
// the last commits live in the server's shared memory and a SIGKILL loses
// them after they were acknowledged, which a design keeping its lock or its
// data there would be blamed for. TCP on loopback only and no Unix socket (a run
// directory's path may exceed a socket path's 107 bytes), small memory,
// and every log line on stderr, which is the node's log. Dynamic shared
// memory lives in files under the data directory (pg_dynshmem), not in
// /dev/shm: a killed postmaster cannot remove its segments, and two were
// left in /dev/shm after every interrupted run. (As root the server also
// gets a private /dev/shm, see privateipc.go; this covers the rest.)
var postgresConfig = []string{
	"fsync=off", "full_page_writes=off",
	"unix_socket_directories=", "dynamic_shared_memory_type=mmap",
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
// directory, where its server runs, and starts postgres on a free port.
// Under root both run as PostgresOSUser, who gets the node's directory.
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
	// Who may connect is in a file of the node's directory, not in the
	// data directory initdb makes, which may be on another host by then
	// (--nodes). On loopback the server's own host; in a container or on
	// a host clients come from the run's network (nothing else is there).
	hba := filepath.Join(dir, "pg_hba.conf")
	trusted := "host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n"
	if c.backend.BindHost() != "127.0.0.1" {
		trusted = "host all all all trust\n"
	}
	if err := os.WriteFile(hba, []byte(trusted), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", hba, err)
	}
	// A container's segment is in its own IPC namespace, and so is a
	// private one's (privateipc.go): only a server in the host's needs its
	// interlock released.
	_, local := c.backend.(local)
	private := privateIPCWhyNot(PostgresOSUser) == ""
	n := &Node{Name: name, Kind: "postgres", setup: &Spec{Path: initdb, RunAs: PostgresOSUser, PrivateIPC: true,
		Args: []string{"-D", data, "-U", PostgresUser, "--auth=trust", "--no-sync", "--no-instructions", "--encoding=UTF8", "--locale=C"}},
		ready: func(ctx context.Context, addr string) error {
			if err := pingPostgres(ctx, addr); err != nil || !local || private {
				return err
			}
			if err := releaseInterlock(data); err != nil {
				slog.Warn("a postgres shared memory segment may outlive the run", "node", name, "err", err)
			}
			return nil
		}, sessions: &sessionCounter{what: "client backends", count: postgresBackends}}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	n.Port = port
	args := []string{"-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=" + c.backend.BindHost(), "-c", "hba_file=" + hba}
	for _, kv := range postgresConfig {
		args = append(args, "-c", kv)
	}
	for _, k := range c.timeoutKnobs("postgres") {
		args = append(args, "-c", k.String())
	}
	n.spec = Spec{Path: postgres, Args: args, RunAs: PostgresOSUser, PrivateIPC: true}
	if err := c.add(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// releaseInterlock marks the small System V segment a running postmaster
// keeps (its interlock against a second postmaster on the data directory)
// to be destroyed once no process has it attached: a killed postmaster
// cannot remove it, and it was left after every interrupted run. Postgres
// goes on working with it (its processes stay attached), and a restart
// after kill-node finds it gone, which is what it checks. The segment is
// named by postmaster.pid (line 7: key and id) and checked to be the one
// that postmaster (line 1) created before it is touched.
func releaseInterlock(data string) error {
	pidFile, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("postmaster.pid: %w", err)
	}
	lines := strings.Split(string(pidFile), "\n")
	if len(lines) < 7 {
		return fmt.Errorf("postmaster.pid has %d lines, not the 7 of a running postmaster", len(lines))
	}
	pid, errPid := strconv.Atoi(strings.TrimSpace(lines[0]))
	f := strings.Fields(lines[6])
	if errPid != nil || len(f) != 2 {
		return fmt.Errorf("postmaster.pid: no pid and shared memory key and id in %q", pidFile)
	}
	key, errKey := strconv.ParseInt(f[0], 10, 64)
	id, errID := strconv.Atoi(f[1])
	if errKey != nil || errID != nil {
		return fmt.Errorf("postmaster.pid: shared memory %q is not a key and an id", lines[6])
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil {
		return fmt.Errorf("shared memory %d of postmaster %d: %w", id, pid, err)
	}
	if int64(ds.Perm.Key) != key || int(ds.Cpid) != pid {
		return fmt.Errorf("shared memory %d is not postmaster %d's (key %d, made by %d)", id, pid, ds.Perm.Key, ds.Cpid)
	}
	if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil {
		return fmt.Errorf("release shared memory %d of postmaster %d: %w", id, pid, err)
	}
	return nil
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

// postgresBackends counts the server's client backends other than the
// one that asks (pg_stat_activity): a session is a backend process, and
// an advisory lock lives with it, so a backend left after its client is
// gone (a pooled connection never closed) holds its locks.
func postgresBackends(ctx context.Context, addr string) (int, error) {
	conn, err := pgx.Connect(ctx, PostgresURL(addr))
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pg_stat_activity: %w", err)
	}
	return n, nil
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
