package cluster

import (
	"slices"
	"testing"
	"time"
)

// TestTimeoutKnobs: each server spells each timeout in its own knobs and
// units, keepalive probing follows Redis's rule everywhere, and a server
// lacking a kind gets nothing for it.
func TestTimeoutKnobs(t *testing.T) {
	s := time.Second
	tests := []struct {
		server string
		t      Timeouts
		want   []string
	}{
		{"postgres", Timeouts{Keepalive: 9 * s, UserTimeout: 1500 * time.Millisecond, IdleTimeout: 4 * s},
			[]string{"tcp_keepalives_idle=9", "tcp_keepalives_interval=3", "tcp_keepalives_count=3", "tcp_user_timeout=1500", "idle_session_timeout=4000"}},
		// A keepalive under 3 s still probes every second: 0 would be the
		// kernel's default.
		{"pgbouncer", Timeouts{Keepalive: 2 * s, IdleTimeout: 5 * s},
			[]string{"tcp_keepalive=1", "tcp_keepidle=2", "tcp_keepintvl=1", "tcp_keepcnt=3", "client_idle_timeout=5"}},
		{"mariadbd", Timeouts{Keepalive: 30 * s, UserTimeout: s, IdleTimeout: 10 * s, IOTimeout: 3 * s},
			[]string{"tcp_keepalive_time=30", "tcp_keepalive_interval=10", "tcp_keepalive_probes=3", "wait_timeout=10",
				"net_read_timeout=3", "net_write_timeout=3"}},
		{"redis-server", Timeouts{Keepalive: 60 * s, UserTimeout: s, IdleTimeout: 0}, []string{"tcp-keepalive=60"}},
		{"etcd", Timeouts{Keepalive: 60 * s}, nil},
		{"postgres", nil, nil},
	}
	for _, tc := range tests {
		var got []string
		for _, k := range TimeoutKnobs(tc.server, tc.t) {
			got = append(got, k.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: %v, want %v", tc.server, tc.t, got, tc.want)
		}
	}
}

// TestTimeoutUnsupported: a server refuses exactly the kinds it lacks,
// and etcd and ZooKeeper, whose sessions end at the lock's TTL, every
// kind; helpers that hold no session are no timeout servers at all.
func TestTimeoutUnsupported(t *testing.T) {
	for _, k := range []Timeout{Keepalive, UserTimeout, IdleTimeout, IOTimeout} {
		for _, server := range []string{"postgres", "pgbouncer", "mariadbd", "redis-server", "etcd", "java"} {
			lacks := TimeoutUnsupported(server, k) != ""
			want := server == "etcd" || server == "java" ||
				(k == IOTimeout && server != "mariadbd") ||
				(k == UserTimeout && (server == "mariadbd" || server == "redis-server"))
			if lacks != want {
				t.Errorf("%s kind %d: unsupported %v, want %v", server, k, lacks, want)
			}
		}
	}
	got := TimeoutServers([]string{"redis-sentinel", "redis-server", "initdb", "postgres", "mariadb-install-db"})
	if want := []string{"postgres", "redis-server"}; !slices.Equal(got, want) {
		t.Errorf("TimeoutServers: %v, want %v", got, want)
	}
}
