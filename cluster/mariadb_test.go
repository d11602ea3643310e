package cluster

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMariaDB starts a real MariaDB (mariadb-install-db in the test's
// directory, whose path is longer than a Unix socket path may be) and
// checks that it greets clients, does not run as root, and restarts on its
// data after SIGKILL; its data directory goes with RemoveData.
func TestMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("runs mariadb-install-db and starts a real MariaDB server; run without -short")
	}
	c := New(t.TempDir())
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
