package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReadProcStat: a real redis-server's established connections, all of
// them and those on its port, rise by the clients that connect and fall
// back once they close, and its memory is there; none is on a port it
// does not listen on. About 0.2 s.
func TestReadProcStat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real redis-server; run without -short")
	}
	c := New(t.TempDir())
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.StartRedis(ctx, "redis-0", RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := n.Process().HostPid()
	if err != nil {
		t.Fatal(err)
	}
	before, err := ReadProcStat(pid, n.Port)
	if err != nil {
		t.Fatal(err)
	}
	if before.RSS < 1<<20 || before.FDs == 0 {
		t.Fatalf("redis-server at rest: %+v, want an RSS of at least 1 MB and open files", before)
	}
	const clients = 3
	var rdbs []*redis.Client
	for range clients {
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), PoolSize: 1})
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rdbs = append(rdbs, rdb)
	}
	during, err := ReadProcStat(pid, n.Port)
	if err != nil {
		t.Fatal(err)
	}
	if other, err := ReadProcStat(pid, n.Port+1); err != nil || other.TCP != during.TCP || other.Clients != 0 {
		t.Fatalf("with %d clients connected, on a port redis-server does not listen on: %+v, %v", clients, other, err)
	}
	// Open files are not compared: the readiness probe's socket may still
	// be open, half-closed, at rest.
	if during.TCP != before.TCP+clients || during.Clients != before.Clients+clients {
		t.Fatalf("with %d clients connected: %+v; at rest %+v", clients, during, before)
	}
	for _, rdb := range rdbs {
		rdb.Close()
	}
	// The server closes its side once it reads the clients' FIN.
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, err := ReadProcStat(pid, n.Port)
		if err != nil {
			t.Fatal(err)
		}
		if after.TCP == before.TCP && after.Clients == before.Clients {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the clients closed: %+v; at rest %+v", after, before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestVmRSS reads the kB figure of a status file and refuses one without it.
func TestVmRSS(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   int64
		ok     bool
	}{
		{"Name:\tredis-server\nVmPeak:\t  9000 kB\nVmRSS:\t    4096 kB\nThreads:\t5\n", 4096 << 10, true},
		{"Name:\tkworker\nThreads:\t1\n", 0, false},
		{"VmRSS:\t 12 MB\n", 0, false},
	} {
		got, err := parseVmRSS(strings.NewReader(tc.status))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("vmRSS of %q = %d, %v; want %d, ok %v", tc.status, got, err, tc.want, tc.ok)
		}
	}
}
