package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// serverTimeout is the run setting of one kind of server timeout.
type serverTimeout struct {
	kind cluster.Timeout
	flag string
	// unit is what the servers take it in: a value must be whole units.
	unit time.Duration
	get  func(scenario.Config) scenario.Duration
}

var serverTimeouts = []serverTimeout{
	{cluster.Keepalive, "server-keepalive", time.Second, func(c scenario.Config) scenario.Duration { return c.ServerKeepalive }},
	{cluster.UserTimeout, "server-user-timeout", time.Millisecond, func(c scenario.Config) scenario.Duration { return c.ServerUserTimeout }},
	{cluster.IdleTimeout, "server-idle-timeout", time.Second, func(c scenario.Config) scenario.Duration { return c.ServerIdleTimeout }},
	{cluster.IOTimeout, "server-io-timeout", time.Second, func(c scenario.Config) scenario.Duration { return c.ServerIOTimeout }},
}

// checkTimeoutValues refuses a server timeout that is negative or not in
// the whole units the servers take: rounding it would run under a value
// the user did not give.
func checkTimeoutValues(cfg scenario.Config) error {
	for _, s := range serverTimeouts {
		d := time.Duration(s.get(cfg))
		if d < 0 || d%s.unit != 0 {
			return fmt.Errorf("--%s %s: give whole %s (the servers take no less), or 0 for each server's own default",
				s.flag, d, map[time.Duration]string{time.Second: "seconds", time.Millisecond: "milliseconds"}[s.unit])
		}
	}
	return nil
}

// timeouts are the server timeouts cfg sets, for cluster.SetTimeouts.
func timeouts(cfg scenario.Config) cluster.Timeouts {
	t := cluster.Timeouts{}
	for _, s := range serverTimeouts {
		if d := time.Duration(s.get(cfg)); d > 0 {
			t[s.kind] = d
		}
	}
	return t
}

// checkTimeoutServers refuses a server timeout the design's servers
// cannot take, rather than run under another than the one asked for: a
// verdict says under which timeouts it holds.
func checkTimeoutServers(cfg scenario.Config, d impls.Design) error {
	servers := cluster.TimeoutServers(impls.ServerBinaries(d))
	for _, s := range serverTimeouts {
		if s.get(cfg) == 0 {
			continue
		}
		head := fmt.Sprintf("--%s %s", s.flag, s.get(cfg))
		switch {
		case len(cfg.Servers) > 0:
			return fmt.Errorf("%s: the lock servers are yours (--servers), locktest sets nothing on them: set it on your servers and drop it here", head)
		case len(servers) == 0:
			return fmt.Errorf("%s: impl %s starts no server that keeps its clients' sessions: drop it", head, cfg.Impl)
		}
		for _, srv := range servers {
			why := cluster.TimeoutUnsupported(srv, s.kind)
			if why == "" {
				continue
			}
			var takes []string
			for _, o := range serverTimeouts {
				if cluster.TimeoutUnsupported(srv, o.kind) == "" {
					takes = append(takes, "--"+o.flag)
				}
			}
			if len(takes) > 0 {
				why += " (it takes " + strings.Join(takes, ", ") + ")"
			}
			return fmt.Errorf("%s: impl %s runs %s, and %s: drop it", head, cfg.Impl, srv, why)
		}
	}
	return nil
}

// ServerTimeoutSettings names the server timeouts cfg sets, as
// "server_keepalive=4s", in the settings' order; none when every server
// keeps its defaults. A sweep records them: its boundary holds under them.
func ServerTimeoutSettings(cfg scenario.Config) []string {
	var out []string
	for _, s := range serverTimeouts {
		if v := s.get(cfg); v != 0 {
			out = append(out, settingName(s.flag)+"="+v.String())
		}
	}
	return out
}

// ServerDefault is the value of a timeout a run left to the servers.
const ServerDefault = "server default"

// runTimeouts are the timeouts a run's verdict holds under: the client's
// per-request timeout, and each server timeout the design's servers can
// take, with the knobs each server got, or ServerDefault. A design whose
// servers take none (etcd, ZooKeeper: their sessions end at the lock's
// TTL) or servers the user runs have the client's alone.
func runTimeouts(cfg Resolved) []reports.Timeout {
	out := []reports.Timeout{{Name: settingName("io-timeout"), Value: time.Duration(cfg.IOTimeout).String()}}
	if len(cfg.Servers) > 0 {
		return out
	}
	servers := cluster.TimeoutServers(impls.ServerBinaries(cfg.Design))
	set := timeouts(cfg.Config)
	for _, s := range serverTimeouts {
		t := reports.Timeout{Name: settingName(s.flag), Value: ServerDefault}
		taken := false
		for _, srv := range servers {
			if cluster.TimeoutUnsupported(srv, s.kind) != "" {
				continue
			}
			taken = true
			if d := set[s.kind]; d > 0 {
				t.Value = d.String()
				var knobs []string
				for _, k := range cluster.TimeoutKnobs(srv, cluster.Timeouts{s.kind: d}) {
					knobs = append(knobs, k.String())
				}
				t.Knobs = append(t.Knobs, srv+" "+strings.Join(knobs, " "))
			}
		}
		if taken {
			out = append(out, t)
		}
	}
	return out
}

// settingName is the config.json name of the setting of --flag.
func settingName(flag string) string {
	s, ok := scenario.SettingByFlag(flag)
	if !ok {
		panic("runner: no setting --" + flag)
	}
	return s.Name()
}
