package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	_ "github.com/go-sql-driver/mysql" // mariadbThreads asks through database/sql
)

// mariadbOSUser is the system user MariaDB's programs run as when the
// coordinator is root (Debian's mariadb-server creates it): mariadbd
// refuses root unless told otherwise.
const mariadbOSUser = "mysql"

// mariadbConfig suits a server that lives for one test run: no grant
// tables (any user, no password: it listens on loopback only), no flush at
// commit (a killed server keeps what the kernel has), a small buffer pool
// neither dumped nor reloaded and a temporary tablespace of 1 MB instead of
// 12 MB written out at each start (a restart after kill-node takes 0.16-0.28 s
// instead of 0.36-0.38 s), no host name lookups. The Unix socket's path is relative to the data
// directory, which mariadbd makes its working directory: a run
// directory's path may exceed a socket path's 107 bytes. The log goes to
// stderr, which is the node's log.
var mariadbConfig = []string{
	"--skip-grant-tables", "--skip-name-resolve", "--socket=" + mariadbSocket,
	"--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=16M",
	"--innodb-buffer-pool-load-at-startup=0", "--innodb-buffer-pool-dump-at-shutdown=0",
	"--innodb-temp-data-file-path=ibtmp1:1M:autoextend",
}

// mariadbSocket is the name of the Unix socket mariadbd must listen on (it
// has no setting for none). Nobody connects through it, and a killed
// server leaves it behind, world-writable: once the server is ready, the
// node unlinks it (unlinkSocket), which leaves the listening socket in
// place and nothing on disk on any exit path.
const mariadbSocket = "mysqld.sock"

// unlinkSocket removes the socket file at path, if there is one.
func unlinkSocket(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the server's socket file: %w", err)
	}
	return nil
}

// mariadbBinaries checks that mariadb-install-db and mariadbd are installed.
func mariadbBinaries() (install, server string, err error) {
	if install, err = LookBinary("mariadb-install-db", "mariadb-server"); err != nil {
		return "", "", err
	}
	if server, err = LookBinary("mariadbd", "mariadb-server"); err != nil {
		return "", "", err
	}
	return install, server, nil
}

// StartMariaDB creates a data directory with mariadb-install-db in the
// node's directory, where its server runs, and starts mariadbd on a free
// port. Under root both run as mariadbOSUser, who gets the node's
// directory. Clients connect as any user (see mariadbConfig).
func (c *Cluster) StartMariaDB(ctx context.Context, name string) (*Node, error) {
	install, server, err := mariadbBinaries()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, name)
	data := filepath.Join(dir, "data")
	// Its own directory for temporary tables: in the shared /tmp, a file
	// of another server or of a cleaner vanished under a bootstrap once
	// ("Could not remove temporary table", install-db failed).
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", tmp, err)
	}
	for _, d := range []string{dir, tmp} {
		if err := chownToRunAs(d, mariadbOSUser); err != nil {
			return nil, err
		}
	}
	n := &Node{Name: name, Kind: "mariadb", setup: &Spec{Path: install, RunAs: mariadbOSUser,
		Args: []string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp, "--skip-test-db", "--skip-name-resolve"}},
		ready: func(ctx context.Context, addr string) error {
			if err := pingMariaDB(ctx, addr); err != nil {
				return err
			}
			if err := unlinkSocket(filepath.Join(data, mariadbSocket)); err != nil {
				slog.Warn("mariadbd's socket file may outlive the run", "node", name, "err", err)
			}
			return nil
		}, sessions: &sessionCounter{what: "connected threads", count: mariadbThreads}}
	if n.Port, err = FreePort(); err != nil {
		return nil, err
	}
	// --no-defaults must come first: no /etc/mysql configuration applies.
	args := []string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp, "--port=" + strconv.Itoa(n.Port),
		"--bind-address=" + c.backend.BindHost()}
	args = append(args, mariadbConfig...)
	for _, k := range c.timeoutKnobs("mariadbd") {
		args = append(args, "--"+k.String())
	}
	n.spec = Spec{Path: server, Args: args, RunAs: mariadbOSUser}
	if err := c.add(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// MariaDBDSN is the go-sql-driver/mysql data source name for the node at
// addr (the node itself, or a link to it).
func MariaDBDSN(addr string) string { return "locktest@tcp(" + addr + ")/" }

// mariadbThreads is the server's Threads_connected less the asking
// connection: a session is a connection's thread, and a GET_LOCK lock
// lives with it, so a thread left after its client is gone holds its
// locks.
func mariadbThreads(ctx context.Context, addr string) (int, error) {
	db, err := sql.Open("mysql", MariaDBDSN(addr))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var name string
	var n int
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n); err != nil {
		return 0, fmt.Errorf("Threads_connected: %w", err)
	}
	return n - 1, nil
}

// pingMariaDB answers nil once the server greets a connection with its
// handshake (protocol version 10), which it sends only once it accepts
// sessions; an error packet (0xff) or nothing at all is not ready.
func pingMariaDB(ctx context.Context, addr string) error {
	conn, err := dialReady(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	// A packet: 3 bytes of length, 1 of sequence, then the payload.
	head := make([]byte, 5)
	if _, err := io.ReadFull(conn, head); err != nil {
		return fmt.Errorf("read the greeting: %w", err)
	}
	if head[4] != 10 {
		return fmt.Errorf("greeting starts with 0x%02x, not protocol version 10", head[4])
	}
	return nil
}
