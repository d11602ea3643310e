package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// TestResolveServerTimeouts: a server timeout is refused, in one line that
// names the flag and the fix, when its value is not in the servers' units
// or when a server of the design cannot take it; each design takes the
// kinds its servers have, and the command that reproduces the run gives
// them again.
func TestResolveServerTimeouts(t *testing.T) {
	s := scenario.Duration(time.Second)
	cases := []struct {
		name string
		impl string
		edit func(*scenario.Config)
		want string // "" = resolves
	}{
		{"postgres, every kind it has", "postgres-advisory", func(c *scenario.Config) {
			c.ServerKeepalive, c.ServerUserTimeout, c.ServerIdleTimeout = 10*s, scenario.Duration(2500*time.Millisecond), 30*s
		}, ""},
		{"pgbouncer in front", "postgres-advisory-pgbouncer", func(c *scenario.Config) { c.ServerUserTimeout = 2 * s }, ""},
		{"mariadb", "mariadb-getlock", func(c *scenario.Config) { c.ServerIOTimeout, c.ServerIdleTimeout = 5*s, 60*s }, ""},
		{"sentinels keep their defaults", "redis-replicated", func(c *scenario.Config) { c.ServerKeepalive = 5 * s }, ""},
		{"redis has no user timeout", "redis-single", func(c *scenario.Config) { c.ServerUserTimeout = 2 * s },
			"--server-user-timeout 2s: impl redis-single runs redis-server, and it has no such setting (it takes --server-keepalive, --server-idle-timeout): drop it"},
		{"postgres has no I/O timeout", "postgres-unique", func(c *scenario.Config) { c.ServerIOTimeout = 2 * s },
			"impl postgres-unique runs postgres, and it has no such setting"},
		{"etcd sessions end at the TTL", "etcd", func(c *scenario.Config) { c.ServerIdleTimeout = 2 * s },
			"--server-idle-timeout 2s: impl etcd runs etcd, and a lock's lease ends at its TTL"},
		{"zookeeper", "zookeeper", func(c *scenario.Config) { c.ServerKeepalive = 2 * s }, "ZooKeeper ends a session at its session timeout"},
		{"exec without servers", "exec", func(c *scenario.Config) {
			c.ExecCmd, c.ExecServers, c.ServerKeepalive = "python3 mylock.py", "none", 5*s
		}, "impl exec starts no server that keeps its clients' sessions"},
		{"exec on mariadb's servers", "exec", func(c *scenario.Config) {
			c.ExecCmd, c.ExecServers, c.ServerIdleTimeout = "python3 mylock.py", "mariadb-getlock", 5*s
		}, ""},
		{"the user's servers", "redis-single", func(c *scenario.Config) {
			c.Servers, c.ServerKeepalive = []string{"127.0.0.1:7000"}, 5*s
		}, "the lock servers are yours (--servers)"},
		{"not whole seconds", "redis-single", func(c *scenario.Config) { c.ServerKeepalive = 1500 * scenario.Duration(time.Millisecond) },
			"--server-keepalive 1.5s: give whole seconds"},
		{"not whole milliseconds", "postgres-advisory", func(c *scenario.Config) { c.ServerUserTimeout = scenario.Duration(1500 * time.Microsecond) },
			"--server-user-timeout 1.5ms: give whole milliseconds"},
		{"negative", "redis-single", func(c *scenario.Config) { c.ServerIdleTimeout = -s }, "--server-idle-timeout -1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scenario.Defaults()
			cfg.Impl = tc.impl
			tc.edit(&cfg)
			r, err := Resolve(cfg)
			if tc.want != "" {
				var b *BadConfigError
				if !errors.As(err, &b) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line of bad config saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range serverTimeouts {
				if v := st.get(cfg); v != 0 && !strings.Contains(r.Command(), " --"+st.flag+" "+v.String()) {
					t.Errorf("command %s does not give --%s %s", r.Command(), st.flag, v)
				}
			}
		})
	}
}

// TestRunTimeouts: the timeouts a verdict holds under are the client's
// request timeout and each kind the design's servers take, with the knobs
// every server got, or "server default"; etcd's and the user's servers
// take none.
func TestRunTimeouts(t *testing.T) {
	cases := []struct {
		name string
		impl string
		edit func(*scenario.Config)
		want []reports.Timeout
	}{
		{"pgbouncer in front of postgres", "postgres-advisory-pgbouncer", func(c *scenario.Config) {
			c.ServerKeepalive = scenario.Duration(6 * time.Second)
		}, []reports.Timeout{
			{Name: "io_timeout", Value: "500ms"},
			{Name: "server_keepalive", Value: "6s", Knobs: []string{
				"pgbouncer tcp_keepalive=1 tcp_keepidle=6 tcp_keepintvl=2 tcp_keepcnt=3",
				"postgres tcp_keepalives_idle=6 tcp_keepalives_interval=2 tcp_keepalives_count=3"}},
			{Name: "server_user_timeout", Value: ServerDefault},
			{Name: "server_idle_timeout", Value: ServerDefault},
		}},
		{"redis defaults", "redis-single", func(*scenario.Config) {}, []reports.Timeout{
			{Name: "io_timeout", Value: "500ms"},
			{Name: "server_keepalive", Value: ServerDefault},
			{Name: "server_idle_timeout", Value: ServerDefault},
		}},
		{"etcd", "etcd", func(*scenario.Config) {}, []reports.Timeout{{Name: "io_timeout", Value: "500ms"}}},
		{"the user's servers", "redis-single", func(c *scenario.Config) { c.Servers = []string{"127.0.0.1:7000"} },
			[]reports.Timeout{{Name: "io_timeout", Value: "500ms"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scenario.Defaults()
			cfg.Impl = tc.impl
			tc.edit(&cfg)
			r, err := Resolve(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := runTimeouts(r)
			if len(got) != len(tc.want) {
				t.Fatalf("timeouts %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Name != tc.want[i].Name || got[i].Value != tc.want[i].Value ||
					strings.Join(got[i].Knobs, "|") != strings.Join(tc.want[i].Knobs, "|") {
					t.Errorf("timeout %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestTimeoutsGiveCluster: the settings become the cluster's kinds and a
// sweep's record, the unset ones absent (each server's default).
func TestTimeoutsGiveCluster(t *testing.T) {
	cfg := scenario.Defaults()
	cfg.ServerUserTimeout, cfg.ServerIOTimeout = scenario.Duration(750*time.Millisecond), scenario.Duration(3*time.Second)
	got := timeouts(cfg)
	if len(got) != 2 || got[cluster.UserTimeout] != 750*time.Millisecond || got[cluster.IOTimeout] != 3*time.Second {
		t.Errorf("timeouts %v", got)
	}
	if got, want := strings.Join(ServerTimeoutSettings(cfg), ","), "server_user_timeout=750ms,server_io_timeout=3s"; got != want {
		t.Errorf("settings %s, want %s", got, want)
	}
	if got := ServerTimeoutSettings(scenario.Defaults()); len(got) != 0 {
		t.Errorf("defaults set %v", got)
	}
}
