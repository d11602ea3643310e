package cluster

import (
	"bufio"
	"context"
	"database/sql"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSessions: each kind that counts its sessions counts the ones a
// client opens, not the question that asks, and none once they are
// closed: a fresh server counts none, two with two sessions open, and
// none again once they are closed.
// Real servers, real clients.
func TestSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real redis, etcd, ZooKeeper, PostgreSQL and MariaDB servers; run without -short")
	}
	ctx := context.Background()
	cases := []struct {
		kind  string
		start func(c *Cluster) (*Node, error)
		// open opens one session to the server at addr and returns what
		// closes it.
		open func(t *testing.T, addr string) func()
	}{
		{"redis", func(c *Cluster) (*Node, error) { return c.StartRedis(ctx, "redis-0", RedisOptions{}) },
			func(t *testing.T, addr string) func() {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				// A reply: the server has accepted the connection.
				if _, err := conn.Write([]byte("PING\r\n")); err != nil {
					t.Fatal(err)
				}
				if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
					t.Fatal(err)
				}
				return func() { conn.Close() }
			}},
		{"etcd", func(c *Cluster) (*Node, error) {
			nodes, err := c.StartEtcd(ctx, 1)
			if err != nil {
				return nil, err
			}
			return nodes[0], nil
		}, func(t *testing.T, addr string) func() {
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			l, err := cli.Grant(ctx, 60)
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if _, err := cli.Revoke(ctx, l.ID); err != nil {
					t.Error(err)
				}
				cli.Close()
			}
		}},
		{"zookeeper", func(c *Cluster) (*Node, error) {
			e, err := c.StartZooKeeper(ctx, 3) // one server alone elects no leader here
			if err != nil {
				return nil, err
			}
			return e.Nodes[0], nil
		}, func(t *testing.T, addr string) func() {
			conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
			if err != nil {
				t.Fatal(err)
			}
			for ev := range events {
				if ev.State == zk.StateHasSession {
					break
				}
			}
			return conn.Close
		}},
		{"postgres", func(c *Cluster) (*Node, error) { return c.StartPostgres(ctx, "postgres-0") },
			func(t *testing.T, addr string) func() {
				conn, err := pgx.Connect(ctx, PostgresURL(addr))
				if err != nil {
					t.Fatal(err)
				}
				return func() { conn.Close(ctx) }
			}},
		{"mariadb", func(c *Cluster) (*Node, error) { return c.StartMariaDB(ctx, "mariadb-0") },
			func(t *testing.T, addr string) func() {
				db, err := sql.Open("mysql", MariaDBDSN(addr))
				if err != nil {
					t.Fatal(err)
				}
				conn, err := db.Conn(ctx) // one connection held
				if err != nil {
					t.Fatal(err)
				}
				return func() { conn.Close(); db.Close() }
			}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			c := New(t.TempDir())
			defer c.Stop()
			n, err := tc.start(c)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok := n.CountsSessions(); !ok {
				t.Fatalf("a %s node does not count its sessions", tc.kind)
			}
			// settled waits for the count to be want: a server sees a
			// closed connection on its next turn.
			settled := func(want int) {
				t.Helper()
				var got int
				var err error
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					if got, err = n.Sessions(ctx); err == nil && got == want {
						return
					}
				}
				t.Fatalf("%s sessions: %d (%v), want %d", tc.kind, got, err, want)
			}
			// A fresh server has none: the question is not counted.
			settled(0)
			close1, close2 := tc.open(t, n.Addr()), tc.open(t, n.Addr())
			settled(2)
			close1()
			close2()
			settled(0)
		})
	}
}
