package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPostgres starts a real PostgreSQL node (initdb in the test's
// directory) and checks that it serves queries and, under root, runs as
// the unprivileged user that owns its data, not as root.
func TestPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs initdb and starts a real PostgreSQL server; run without -short")
	}
	c := New(t.TempDir())
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	n, err := c.StartPostgres(ctx, "postgres-0")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("initdb and start-up took %s", time.Since(start).Round(time.Millisecond))
	if err := pingPostgres(ctx, n.Addr()); err != nil {
		t.Fatal(err)
	}
	assertNotRoot(t, n)
	assertRestarts(ctx, t, n)
}

// assertNotRoot fails if the node's server runs as root while the test
// does: servers that refuse root must run as their own user.
func assertNotRoot(t *testing.T, n *Node) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.Process().(*Process).Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if uid, ok := strings.CutPrefix(line, "Uid:"); ok && os.Geteuid() == 0 && strings.Fields(uid)[0] == "0" {
			t.Fatalf("%s runs as root", n.Name)
		}
	}
}

// assertRestarts kills the node and starts it again on its port and data,
// as the kill-node fault does.
func assertRestarts(ctx context.Context, t *testing.T, n *Node) {
	t.Helper()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatalf("restart %s after SIGKILL: %v", n.Name, err)
	}
}
