package runner

import (
	"strings"
	"testing"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/scenario"
)

// TestResolveNetwork: what --network, the backend, --servers and the
// faults make of a run's network, and what it says about it. Where this
// machine cannot have a lab, auto is the proxy and an explicit netns is
// refused.
func TestResolveNetwork(t *testing.T) {
	lab := cluster.LabSupport() == nil
	orProxy := func(netns string) string {
		if lab {
			return netns
		}
		return NetworkProxy
	}
	noLabNote := func(note string) string {
		if lab {
			return ""
		}
		return note
	}
	nodes := []string{"10.0.0.1", "10.0.0.2"}
	cases := []struct {
		name    string
		set     func(c *scenario.Config)
		network string // "" for a refusal
		note    string // a substring of the note; "" for none
	}{
		{"default, no fault", func(c *scenario.Config) {}, orProxy(NetworkNetns), ""},
		{"default, a partition", func(c *scenario.Config) { c.Faults = []string{"partition"} }, orProxy(NetworkNetns), noLabNote("partition acts through the proxy")},
		{"default, a delay", func(c *scenario.Config) { c.Faults = []string{"latency"} }, NetworkProxy, "delays packets"},
		{"default, a partition on docker", func(c *scenario.Config) { c.Faults, c.Backend = []string{"partition"}, "docker" }, NetworkProxy, "--backend docker"},
		{"default, no link fault on docker", func(c *scenario.Config) { c.Faults, c.Backend = []string{"pause-holder"}, "docker" }, NetworkProxy, ""},
		{"auto, a pause", func(c *scenario.Config) { c.Network, c.Faults = NetworkAuto, []string{"pause-holder"} }, orProxy(NetworkNetns), ""},
		{"proxy, a partition", func(c *scenario.Config) { c.Network, c.Faults = NetworkProxy, []string{"partition"} }, NetworkProxy, ""},
		{"proxy, loss", func(c *scenario.Config) { c.Network, c.Faults = NetworkProxy, []string{"loss"} }, "", ""},
		{"default, loss on docker", func(c *scenario.Config) { c.Faults, c.Backend = []string{"loss"}, "docker" }, "", ""},
		{"netns, a delay", func(c *scenario.Config) { c.Network, c.Faults = NetworkNetns, []string{"latency"} }, NetworkProxy, "asked for --network netns"},
		{"netns, a pause", func(c *scenario.Config) { c.Network, c.Faults = NetworkNetns, []string{"pause-holder"} }, NetworkNetns, ""},
		// --nodes: the hosts' firewalls only when asked or needed.
		{"nodes, a partition", func(c *scenario.Config) { c.Nodes, c.Faults = nodes, []string{"partition"} }, NetworkProxy, "--network firewall would make it"},
		{"nodes, a pause", func(c *scenario.Config) { c.Nodes, c.Faults = nodes, []string{"pause-holder"} }, NetworkProxy, ""},
		{"nodes, loss", func(c *scenario.Config) { c.Nodes, c.Faults = nodes, []string{"loss"} }, NetworkFirewall, ""},
		{"nodes, firewall, a partition", func(c *scenario.Config) {
			c.Nodes, c.Network, c.Faults = nodes, NetworkFirewall, []string{"partition"}
		}, NetworkFirewall, ""},
		{"nodes, firewall, a delay", func(c *scenario.Config) {
			c.Nodes, c.Network, c.Faults = nodes, NetworkFirewall, []string{"latency"}
		}, NetworkProxy, "asked for --network firewall"},
		{"nodes, firewall, the holder's links", func(c *scenario.Config) {
			c.Nodes, c.Network, c.Faults, c.FaultTarget = nodes, NetworkFirewall, []string{"partition"}, "holder"
		}, "", ""},
		{"nodes, firewall, one client's link", func(c *scenario.Config) {
			c.Nodes, c.Network, c.Faults, c.FaultTarget = nodes, NetworkFirewall, []string{"loss"}, "link:c0:redis-0"
		}, "", ""},
		{"nodes, proxy, loss", func(c *scenario.Config) { c.Nodes, c.Network, c.Faults = nodes, NetworkProxy, []string{"loss"} }, "", ""},
		{"nodes, netns", func(c *scenario.Config) { c.Nodes, c.Network = nodes, NetworkNetns }, "", ""},
		{"firewall without nodes", func(c *scenario.Config) { c.Network = NetworkFirewall }, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scenario.Defaults()
			cfg.Impl = "redis-single"
			tc.set(&cfg)
			r, err := Resolve(cfg)
			want := tc.network
			if !lab && cfg.Network == NetworkNetns && want != NetworkProxy && len(cfg.Nodes) == 0 {
				want = "" // netns asked for where it cannot be had
			}
			switch {
			case want == "" && err == nil:
				t.Fatalf("resolved to %s, want a refusal", r.Network)
			case want == "":
				return
			case err != nil:
				t.Fatalf("refused: %v", err)
			case r.Network != want:
				t.Errorf("network %s, want %s", r.Network, want)
			case tc.note == "" && r.NetworkNote != "":
				t.Errorf("note %q, want none", r.NetworkNote)
			case !strings.Contains(r.NetworkNote, tc.note):
				t.Errorf("note %q, want one saying %q", r.NetworkNote, tc.note)
			}
			// A suite resolves again after setting a backend: the asked
			// network decides, not the first resolution.
			if len(cfg.Nodes) > 0 {
				return
			}
			r.Backend = "docker"
			if err := ResolveNetwork(&r); err == nil && r.Network != NetworkProxy {
				t.Errorf("on docker after resolving: network %s, want proxy", r.Network)
			}
		})
	}
}
