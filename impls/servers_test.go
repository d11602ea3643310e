package impls

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
)

func userServers(addrs ...string) []cluster.UserServer {
	out := make([]cluster.UserServer, len(addrs))
	for i, a := range addrs {
		out[i].Addr = a
	}
	return out
}

func TestOnServers(t *testing.T) {
	single, err := Lookup("redis-single")
	if err != nil {
		t.Fatal(err)
	}
	redlock, err := Lookup("redlock")
	if err != nil {
		t.Fatal(err)
	}
	replicated, err := Lookup("redis-replicated")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := ExecDesign("python3 mylock.py", "none")
	if err != nil {
		t.Fatal(err)
	}
	five := userServers("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5")
	cases := []struct {
		name    string
		d       Design
		servers []cluster.UserServer
		want    string // "" = accepted
		nodes   int
	}{
		{"redis-single", single, five[:1], "", 1},
		{"redis-single, two", single, five[:2], "runs on 1 server(s), 2 given", 0},
		{"redlock", redlock, five, "", 5},
		{"redlock, three", redlock, five[:3], "runs on 5 server(s), 3 given", 0},
		{"exec, one", exec, five[:1], "", 1},
		{"exec, five", exec, five, "", 5},
		{"sentinel", replicated, five[:3], "cannot run on servers you run", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := OnServers(tc.d, tc.servers)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(u.Roles) != tc.nodes {
				t.Fatalf("roles %v, want %d", u.Roles, tc.nodes)
			}
			for b, pkg := range u.Binaries {
				if pkg != "" {
					t.Errorf("still needs server binary %s (%s)", b, pkg)
				}
			}
			c := cluster.New(t.TempDir())
			defer c.Stop()
			dep, err := u.Deploy(context.Background(), c, lock.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range dep.Nodes {
				if n.Addr() != tc.servers[i].Addr || n.Name != cluster.UserServerName(i) {
					t.Errorf("node %d is %s at %s, want %s at %s", i, n.Name, n.Addr(), cluster.UserServerName(i), tc.servers[i].Addr)
				}
			}
		})
	}
	if _, ok := exec.Binaries["python3"]; !ok {
		t.Fatal("the exec design does not name its program")
	}
	if u, _ := OnServers(exec, five[:1]); u.Binaries["python3"] != "" || len(u.Binaries) != 1 {
		t.Errorf("exec on --servers needs %v, want the program alone", u.Binaries)
	}
	if !slices.Contains(PlainNodeNames(), "redis-single") || slices.Contains(PlainNodeNames(), "redis-replicated") {
		t.Errorf("designs that take --servers: %v", PlainNodeNames())
	}
}

// TestOnServersCheck: the design's own check comes first, then every
// server is dialed.
func TestOnServersCheck(t *testing.T) {
	d, err := Lookup("redis-single")
	if err != nil {
		t.Fatal(err)
	}
	own := errors.New("the design's own check")
	d.Check = func() error { return own }
	u, err := OnServers(d, userServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Check(); !errors.Is(err, own) {
		t.Fatalf("check %v, want the design's own first", err)
	}
	d.Check = nil
	if u, _ = OnServers(d, userServers("127.0.0.1:1")); u.Check() == nil {
		t.Fatal("a server nobody listens on passed the check")
	}
}
