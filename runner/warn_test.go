package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/scenario"
)

func TestWarnings(t *testing.T) {
	ms := func(n int) scenario.Duration { return scenario.Duration(time.Duration(n) * time.Millisecond) }
	cases := []struct {
		name  string
		set   func(c *scenario.Config)
		warns []string // one substring per expected warning, in order
	}{
		{"defaults with a pause", func(c *scenario.Config) { c.Faults = []string{"pause-holder"} }, nil},
		{"no fault, odd flags", func(c *scenario.Config) { c.FaultDuration, c.Duration, c.Latency, c.Jitter = ms(10), ms(100), 0, 0 }, nil},
		{"pause shorter than the lease", func(c *scenario.Config) { c.Faults, c.FaultDuration = []string{"pause-holder"}, ms(900) },
			[]string{"pause-holder: pauses of 900ms plus --hold-max 60ms are shorter than --ttl 1s"}},
		{"a pair's second pause, its own length shorter than the lease", func(c *scenario.Config) {
			c.Faults, c.FaultDuration, c.FaultDuration2 = []string{"latency+pause-holder"}, ms(3000), ms(600)
		}, []string{"pause-holder: pauses of 600ms plus --hold-max 60ms are shorter than --ttl 1s: a client paused just after its grant still has its lease when it resumes; use a --fault-duration2 above --ttl"}},
		{"a pair's first pause, its own length outliving the lease", func(c *scenario.Config) {
			c.Faults, c.FaultDuration, c.FaultDuration2 = []string{"pause-holder+latency"}, ms(1500), ms(200)
		}, nil},
		{"pause just outlives the lease less a hold", func(c *scenario.Config) { c.Faults, c.FaultDuration = []string{"pause-holder"}, ms(950) }, nil},
		{"pause-acquire on redlock", func(c *scenario.Config) {
			c.Impl, c.Faults, c.FaultDuration = "redlock", []string{"pause-acquire"}, ms(500)
		},
			[]string{"pause-acquire: pauses of 500ms"}},
		{"pause of any client under half the lease", func(c *scenario.Config) { c.Faults, c.FaultDuration = []string{"pause-client"}, ms(400) },
			[]string{"pause-client: pauses of 400ms plus --hold-max 60ms are under half of --ttl 1s"}},
		{"pause of any client may outlive a kept-alive lease", func(c *scenario.Config) { c.Faults, c.FaultDuration = []string{"pause-client"}, ms(700) }, nil},
		{"pause-waiter on etcd", func(c *scenario.Config) {
			c.Impl, c.Faults, c.FaultDuration = "etcd", []string{"pause-waiter"}, ms(300)
		},
			[]string{"pause-waiter: pauses of 300ms"}},
		{"slow write the client will not wait for", func(c *scenario.Config) { c.Faults = []string{"slow-resource-write"} },
			[]string{"slow-resource-write: writes are delayed by --fault-duration 2s, longer than --io-timeout 500ms"}},
		{"slow write waited for", func(c *scenario.Config) { c.Faults, c.IOTimeout = []string{"slow-resource-write"}, ms(3000) }, nil},
		{"slow write landing inside the lease", func(c *scenario.Config) {
			c.Faults, c.IOTimeout, c.FaultDuration = []string{"slow-resource-write"}, ms(3000), ms(800)
		}, []string{"slow-resource-write: a write delayed by 800ms"}},
		{"latency every client request times out on", func(c *scenario.Config) { c.Faults, c.Latency, c.Jitter = []string{"latency"}, ms(600), ms(50) },
			[]string{"latency: every round trip on a client's link is delayed at least 550ms"}},
		{"latency some requests survive", func(c *scenario.Config) { c.Faults, c.Latency, c.Jitter = []string{"latency"}, ms(600), ms(150) }, nil},
		{"latency between servers only", func(c *scenario.Config) {
			c.Faults, c.Latency, c.FaultTarget = []string{"latency"}, ms(600), "node/peers"
		}, nil},
		{"latency on one client link", func(c *scenario.Config) {
			c.Faults, c.Latency, c.FaultTarget = []string{"latency"}, ms(600), "link:c0:redis-0"
		}, []string{"latency: every round trip"}},
		{"latency on a peer link", func(c *scenario.Config) {
			c.Faults, c.Latency, c.FaultTarget = []string{"latency"}, ms(600), "link:redis-0:redis-1"
		}, nil},
		{"latency of nothing", func(c *scenario.Config) { c.Faults, c.Latency, c.Jitter = []string{"latency"}, 0, 0 },
			[]string{"latency: --latency 0s adds no delay"}},
		{"failover with short holds", func(c *scenario.Config) { c.Impl, c.Faults = "redis-replicated", []string{"failover"} },
			[]string{"failover: holds end within --hold-max 60ms"}},
		{"failover with long holds", func(c *scenario.Config) {
			c.Impl, c.Faults, c.HoldMin, c.HoldMax = "redis-replicated", []string{"failover"}, ms(1500), ms(1800)
		}, nil},
		{"clock jump past the lease", func(c *scenario.Config) { c.Faults = []string{"clock-bump"} }, nil},
		{"small clock jump back", func(c *scenario.Config) { c.Faults, c.ClockDelta = []string{"clock-strobe"}, ms(-500) },
			[]string{"clock-strobe: a clock jump of 500ms cannot expire a held key early"}},
		{"small client skew", func(c *scenario.Config) { c.Faults, c.ClockDelta = []string{"client-clock-skew"}, ms(300) },
			[]string{"client-clock-skew: a skew of 300ms at true speed"}},
		{"small client skew, fast clock", func(c *scenario.Config) {
			c.Faults, c.ClockDelta, c.ClockRate = []string{"client-clock-skew"}, ms(300), 1.5
		}, nil},
		{"run ends before the first fault", func(c *scenario.Config) { c.Faults, c.Duration = []string{"pause-holder"}, ms(1500) },
			[]string{"no fault will start: each waits at least --fault-interval/2 (1.5s) first, and --duration is 1.5s"}},
		{"faults on most of the run", func(c *scenario.Config) { c.Faults, c.FaultInterval = []string{"kill-holder"}, ms(1000) },
			[]string{"--fault-interval 1s is shorter than --fault-duration 2s"}},
		{"several faults, several warnings", func(c *scenario.Config) {
			c.Faults, c.FaultDuration, c.Latency, c.Jitter = []string{"pause-holder", "latency"}, ms(300), 0, 0
		}, []string{"pause-holder: pauses of 300ms", "latency: --latency 0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scenario.Defaults()
			cfg.Impl = "redis-single"
			tc.set(&cfg)
			r, err := Resolve(cfg)
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			got := Warnings(r)
			if len(got) != len(tc.warns) {
				t.Fatalf("%d warnings, want %d:\n%s", len(got), len(tc.warns), strings.Join(got, "\n"))
			}
			for i, w := range tc.warns {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q lacks %q", got[i], w)
				}
				if strings.Contains(got[i], "\n") {
					t.Errorf("warning spans lines: %q", got[i])
				}
			}
		})
	}
}
