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
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.Process().(*Process).Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if uid, ok := strings.CutPrefix(line, "Uid:"); ok && os.Geteuid() == 0 && strings.Fields(uid)[0] == "0" {
			t.Fatal("postgres runs as root")
		}
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatalf("restart after SIGKILL: %v", err)
	}
}
