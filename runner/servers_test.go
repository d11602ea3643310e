package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/scenario"
)

// TestResolveServers: --servers and --server-pids are read, checked
// against the design and the faults before anything starts, and the
// command that reproduces the run gives them again.
func TestResolveServers(t *testing.T) {
	base := func(impl string, faults ...string) scenario.Config {
		cfg := scenario.Defaults()
		cfg.Impl, cfg.Faults = impl, faults
		return cfg
	}
	cases := []struct {
		name string
		edit func(*scenario.Config)
		want string // "" = resolves
	}{
		{"pause-holder", func(c *scenario.Config) {
			*c = base("redis-single", "pause-holder")
			c.Servers = []string{"127.0.0.1:7000"}
		}, ""},
		{"link faults", func(c *scenario.Config) {
			*c = base("redlock", "partition", "latency", "reset-peer")
			c.Servers = []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004"}
		}, ""},
		{"pause-node with pids", func(c *scenario.Config) {
			*c = base("redis-single", "pause-node")
			c.Servers, c.ServerPids = []string{"127.0.0.1:7000"}, []string{"4242"}
		}, ""},
		{"pause-node without pids", func(c *scenario.Config) {
			*c = base("redis-single", "pause-node")
			c.Servers = []string{"127.0.0.1:7000"}
		}, "give your servers' pids with --server-pids"},
		{"kill-node", func(c *scenario.Config) {
			*c = base("redis-single", "kill-node")
			c.Servers, c.ServerPids = []string{"127.0.0.1:7000"}, []string{"4242"}
		}, "fault kill-node needs servers locktest starts"},
		{"count", func(c *scenario.Config) { *c = base("redlock", "none"); c.Servers = []string{"127.0.0.1:7000"} }, "runs on 5 server(s), 1 given"},
		{"pids alone", func(c *scenario.Config) { *c = base("redis-single", "none"); c.ServerPids = []string{"4242"} }, "--server-pids needs --servers"},
		{"malformed", func(c *scenario.Config) { *c = base("redis-single", "none"); c.Servers = []string{"localhost"} }, "not host:port"},
		{"exec", func(c *scenario.Config) {
			*c = base("exec", "partition")
			c.ExecCmd, c.Servers = "python3 mylock.py", []string{"127.0.0.1:7000", "127.0.0.1:7001"}
		}, ""},
		{"exec as redis-single", func(c *scenario.Config) {
			*c = base("exec", "none")
			c.ExecCmd, c.ExecServers, c.Servers = "python3 mylock.py", "redis-single", []string{"127.0.0.1:7000"}
		}, ""},
		{"exec as redlock, one", func(c *scenario.Config) {
			*c = base("exec", "none")
			c.ExecCmd, c.ExecServers, c.Servers = "python3 mylock.py", "redlock", []string{"127.0.0.1:7000"}
		}, "runs on 5 server(s), 1 given"},
		{"pid no number", func(c *scenario.Config) {
			*c = base("redis-single", "pause-node")
			c.Servers, c.ServerPids = []string{"127.0.0.1:7000"}, []string{"x"}
		}, "--server-pids: x is no server's process id"},
		{"sentinel", func(c *scenario.Config) {
			*c = base("redis-replicated", "none")
			c.Servers = []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}
		}, "cannot run on servers you run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg scenario.Config
			tc.edit(&cfg)
			r, err := Resolve(cfg)
			if tc.want != "" {
				var b *BadConfigError
				if !errors.As(err, &b) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want a bad config saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Design.Roles) != len(cfg.Servers) {
				t.Errorf("design has %d nodes, %d servers given", len(r.Design.Roles), len(cfg.Servers))
			}
			if _, ok := binaries(r)["redis-server"]; ok != r.Workload.NeedsResource {
				t.Errorf("binaries %v: redis-server only for the resource", binaries(r))
			}
			cmd := r.Command()
			if !strings.Contains(cmd, " --servers "+strings.Join(cfg.Servers, ",")) {
				t.Errorf("command %s does not give --servers", cmd)
			}
			if len(cfg.ServerPids) > 0 && !strings.Contains(cmd, " --server-pids 4242") {
				t.Errorf("command %s does not give --server-pids", cmd)
			}
		})
	}
}

// TestHoldServers: runs that share a user's server take turns; runs on
// other servers do not wait; a cancelled wait gives back what it took.
func TestHoldServers(t *testing.T) {
	ctx := context.Background()
	release, err := holdServers(ctx, []string{"hold-c:1", "hold-b:1"})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	// Sorted, hold-a comes first: taken, then given back on the cancel.
	if _, err := holdServers(short, []string{"hold-b:1", "hold-a:1"}); err == nil {
		t.Fatal("a second run took a server the first still uses")
	}
	soon, cancelSoon := context.WithTimeout(ctx, time.Second)
	defer cancelSoon()
	other, err := holdServers(soon, []string{"hold-a:1"})
	if err != nil {
		t.Fatalf("a run on another server waited (or the cancelled wait kept hold-a): %v", err)
	}
	other()
	got := make(chan error, 1)
	go func() {
		r, err := holdServers(ctx, []string{"hold-a:1", "hold-b:1"})
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	release() // a second release gives back nothing twice
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting run did not get the servers once they were released")
	}
}
