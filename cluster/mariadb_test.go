package cluster

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// TestMariaDB starts a real MariaDB (mariadb-install-db in the test's
// directory, whose path is longer than a Unix socket path may be) and
// checks that it greets clients, does not run as root, and restarts on its
// data after SIGKILL with the run's timeouts; its data directory goes with
// RemoveData.
func TestMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("runs mariadb-install-db and starts a real MariaDB server; run without -short")
	}
	c := New(t.TempDir())
	c.SetTimeouts(testTimeouts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	n, err := c.StartMariaDB(ctx, "mariadb-0-with-a-name-long-enough-to-push-the-socket-path-past-107-bytes")
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	t.Logf("install-db and start-up took %s", time.Since(start).Round(time.Millisecond))
	assertNotRoot(t, n)
	assertRestarts(ctx, t, n)
	if err := pingMariaDB(ctx, n.Addr()); err != nil {
		t.Fatal(err)
	}
	assertMariaDBTimeouts(ctx, t, n)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveData(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(n.Dir, "data")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the data directory is still there after RemoveData (%v)", err)
	}
}

// assertMariaDBTimeouts fails unless the server's variables are the knobs
// testTimeouts gives it.
func assertMariaDBTimeouts(ctx context.Context, t *testing.T, n *Node) {
	t.Helper()
	db, err := sql.Open("mysql", MariaDBDSN(n.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	knobs := TimeoutKnobs("mariadbd", testTimeouts)
	if len(knobs) == 0 {
		t.Fatal("no knobs for mariadbd")
	}
	for _, k := range knobs {
		var got string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+k.Name).Scan(&got); err != nil {
			t.Fatalf("mariadb %s: %v", k.Name, err)
		}
		if got != k.Value {
			t.Errorf("mariadb %s = %s, want %s", k.Name, got, k.Value)
		}
	}
}
