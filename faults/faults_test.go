package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Each test proves that a fault takes effect on real processes, links or
// clocks while it lasts, and is undone when it stops.

func TestPauseNode(t *testing.T) {
	b := newBench(t, 3, false)
	hit, stop := b.run(t, "pause-node", "")
	defer stop()
	n := b.node(t, hit)
	if !eventually(n.Process().Stopped) {
		t.Fatalf("%s not stopped", hit)
	}
	if _, err := rtt(n.Addr(), 300*time.Millisecond); err == nil {
		t.Fatalf("paused %s answered", hit)
	}
	b.waitStopped(t)
	if d, err := rtt(n.Addr(), time.Second); err != nil {
		t.Fatalf("%s does not answer after the pause: %v", hit, err)
	} else {
		t.Logf("%s answers again after the pause in %v", hit, d)
	}
	stop()
	b.assertQuiet(t)
}

func TestPauseClient(t *testing.T) {
	for _, tc := range []struct{ fault, target string }{
		{"pause-client", "c1"}, {"pause-client", "client"}, {"pause-holder", "holder"},
	} {
		t.Run(tc.fault+"@"+tc.target, func(t *testing.T) {
			b := newBench(t, 1, false)
			hit, stop := b.run(t, tc.fault, tc.target)
			defer stop()
			var c int
			if _, err := fmt.Sscanf(hit, "c%d", &c); err != nil {
				t.Fatalf("target %q: %v", hit, err)
			}
			if tc.target == "c1" && c != 1 || tc.fault == "pause-holder" && c != 0 {
				t.Fatalf("paused %s, not the client aimed at", hit)
			}
			if !eventually(b.clients.Process(c).Stopped) {
				t.Fatalf("%s not stopped", hit)
			}
			b.waitStopped(t)
			if b.clients.Process(c).Stopped() {
				t.Fatalf("%s still stopped after the fault", hit)
			}
			stop()
			b.assertQuiet(t)
		})
	}
}

func TestKillHolder(t *testing.T) {
	b := newBench(t, 1, false)
	before := b.clients.Process(0)
	hit, stop := b.run(t, "kill-holder", "")
	defer stop()
	if hit != "c0" {
		t.Fatalf("killed %s, want the holder c0", hit)
	}
	if exited, _ := before.Exited(); !exited {
		t.Fatal("holder still running")
	}
	b.waitStopped(t)
	after := b.clients.Process(0)
	if exited, _ := after.Exited(); exited || after == before {
		t.Fatal("holder not restarted as a new process")
	}
	stop()
	b.assertQuiet(t)
}

func TestKillNode(t *testing.T) {
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprintf("persist=%v", persist), func(t *testing.T) {
			b := newBench(t, 1, persist)
			n := b.nodes[0]
			rdb := client(n.Addr())
			defer rdb.Close()
			ctx := context.Background()
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			pid := n.Process().(interface{ Pid() int }).Pid()
			_, stop := b.run(t, "kill-node", "")
			defer stop()
			if _, err := rtt(n.Addr(), 300*time.Millisecond); err == nil {
				t.Fatal("killed node answered")
			}
			b.waitStopped(t)
			if n.Process().(interface{ Pid() int }).Pid() == pid {
				t.Fatal("node not restarted")
			}
			v, err := rdb.Get(ctx, "k").Result()
			switch {
			case persist && (err != nil || v != "v"):
				t.Fatalf("with AOF the restarted node lost its data: %q %v", v, err)
			case !persist && !errors.Is(err, redis.Nil):
				t.Fatalf("without persistence the restarted node kept its data: %q %v", v, err)
			}
			stop()
			b.assertQuiet(t)
		})
	}
}

// TestLatency: both directions of the latency fault slow a round trip
// through the holder's node's links by the latency, and only while the
// fault lasts (cluster.TestLatencyStreams tells the directions apart).
func TestLatency(t *testing.T) {
	for _, fault := range []string{"latency", "reply-latency"} {
		t.Run(fault, func(t *testing.T) {
			b := newBench(t, 3, false)
			hit, stop := b.run(t, fault, "")
			defer stop()
			n := b.node(t, hit)
			link := b.link(t, "c0:"+hit)
			direct, err := rtt(n.Addr(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := rtt(link.Addr(), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// Latency 300ms, no jitter: the proxied round trip takes that longer.
			if slow < 300*time.Millisecond || slow > 800*time.Millisecond {
				t.Fatalf("PING through %s took %v with 300ms latency (direct %v)", link.Name, slow, direct)
			}
			b.waitStopped(t)
			fast, err := rtt(link.Addr(), time.Second)
			if err != nil || fast > 150*time.Millisecond {
				t.Fatalf("after the fault PING through %s took %v (%v)", link.Name, fast, err)
			}
			stop()
			b.assertQuiet(t)
		})
	}
}

func TestPartition(t *testing.T) {
	b := newBench(t, 3, false)
	hit, stop := b.run(t, "partition", "")
	defer stop()
	n := b.node(t, hit)
	for _, c := range []string{"c0", "c1"} {
		l := b.link(t, c+":"+hit)
		if d, err := rtt(l.Addr(), 400*time.Millisecond); err == nil {
			t.Fatalf("PING through cut link %s answered in %v", l.Name, d)
		} else if d < 350*time.Millisecond {
			t.Fatalf("PING through cut link %s failed in %v, before its timeout: %v", l.Name, d, err)
		}
	}
	if _, err := rtt(n.Addr(), time.Second); err != nil {
		t.Fatalf("the node itself should answer: %v", err)
	}
	b.waitStopped(t)
	if _, err := rtt(b.link(t, "c0:"+hit).Addr(), time.Second); err != nil {
		t.Fatalf("link still cut after the fault: %v", err)
	}
	stop()
	b.assertQuiet(t)
}

func TestResetPeer(t *testing.T) {
	b := newBench(t, 1, false)
	hit, stop := b.run(t, "reset-peer", "c1")
	defer stop()
	if hit != "c1" {
		t.Fatalf("hit %s, want c1's links", hit)
	}
	if d, err := rtt(b.link(t, "c1:redis-0").Addr(), 2*time.Second); err == nil || d > time.Second {
		t.Fatalf("PING through a resetting link: %v after %v", err, d)
	}
	if _, err := rtt(b.link(t, "c0:redis-0").Addr(), time.Second); err != nil {
		t.Fatalf("c0's link was not aimed at: %v", err)
	}
	b.waitStopped(t)
	if _, err := rtt(b.link(t, "c1:redis-0").Addr(), time.Second); err != nil {
		t.Fatalf("link still resets after the fault: %v", err)
	}
	stop()
	b.assertQuiet(t)
}

func TestSlowResourceWrite(t *testing.T) {
	b := newBench(t, 1, false)
	hit, stop := b.run(t, "slow-resource-write", "")
	defer stop()
	if hit != "c0:resource" {
		t.Fatalf("hit %s, want the holder's resource link", hit)
	}
	d, err := rtt(b.link(t, hit).Addr(), 5*time.Second)
	if err != nil || d < b.env.Duration {
		t.Fatalf("request to the resource took %v (%v), want ≥ %v", d, err, b.env.Duration)
	}
	t.Logf("holder's request to the resource delayed %v (TTL %v)", d, b.env.TTL)
	b.waitStopped(t)
	if d, err := rtt(b.link(t, hit).Addr(), time.Second); err != nil || d > 150*time.Millisecond {
		t.Fatalf("after the fault: %v %v", d, err)
	}
	stop()
	b.assertQuiet(t)
}

func TestClockBump(t *testing.T) {
	b := newBench(t, 3, false)
	ctx := context.Background()
	for _, n := range b.nodes {
		rdb := client(n.Addr())
		if err := rdb.Set(ctx, "lease", "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		rdb.Close()
	}
	hit, stop := b.run(t, "clock-bump", "")
	defer stop()
	rdb := client(b.node(t, firstName(hit)).Addr())
	defer rdb.Close()
	skew := func() time.Duration {
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(now)
	}
	if s := skew(); s < b.env.ClockDelta-2*time.Second || s > b.env.ClockDelta+2*time.Second {
		t.Fatalf("TIME on %s is off by %v, want %v", hit, s, b.env.ClockDelta)
	} else {
		t.Logf("TIME on %s is off by %v during the bump", hit, s)
	}
	// The lease had a minute left; two minutes later by the server's clock
	// it is gone.
	if err := rdb.Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("key with a minute to live survived a 2m clock jump: %v", err)
	}
	b.waitStopped(t)
	if s := skew(); s < -time.Second || s > time.Second {
		t.Fatalf("TIME on %s still off by %v after the fault", hit, s)
	}
	stop()
	b.assertQuiet(t)
}

func TestClockStrobe(t *testing.T) {
	b := newBench(t, 1, false)
	hit, stop := b.run(t, "clock-strobe", "")
	defer stop()
	rdb := client(b.nodes[0].Addr())
	defer rdb.Close()
	var shifted, true_ int
	for range 20 {
		now, err := rdb.Time(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if time.Until(now) > time.Minute {
			shifted++
		} else {
			true_++
		}
		time.Sleep(20 * time.Millisecond)
	}
	if shifted == 0 || true_ == 0 {
		t.Fatalf("%s: %d shifted and %d true readings in 400ms, want both", hit, shifted, true_)
	}
	b.waitStopped(t)
	now, err := rdb.Time(context.Background()).Result()
	if err != nil || time.Until(now) > time.Second {
		t.Fatalf("clock still shifted after the strobe: %v %v", now, err)
	}
	stop()
	b.assertQuiet(t)
}

func TestClientClockSkew(t *testing.T) {
	b := newBench(t, 1, false)
	b.env.ClockRate = 2
	hit, stop := b.run(t, "client-clock-skew", "c1")
	defer stop()
	if got := b.clients.Clock(1); got != [2]float64{float64(b.env.ClockDelta), 2} {
		t.Fatalf("%s: c1's clock is %v", hit, got)
	}
	b.waitStopped(t)
	stop()
	b.assertQuiet(t)
}

// TestHealOnRunEnd ends the run while each fault is in effect: Run must
// undo it before returning, as the final heal relies on.
func TestHealOnRunEnd(t *testing.T) {
	b := newBench(t, 3, false)
	b.env.Duration = time.Minute // still in effect when the run ends
	for _, fault := range []string{"pause-node", "pause-client", "kill-node", "kill-holder", "latency",
		"partition", "reset-peer", "slow-resource-write", "clock-bump", "clock-strobe", "client-clock-skew"} {
		t.Run(fault, func(t *testing.T) {
			target := ""
			if fault == "pause-node" || fault == "kill-node" || fault == "clock-bump" {
				target = "majority"
			}
			_, stop := b.run(t, fault, target)
			stop()
			b.assertQuiet(t)
		})
	}
}

// TestPauseNodeAll: target "all" stops every server at once, as Jepsen
// pauses a whole cluster.
func TestPauseNodeAll(t *testing.T) {
	b := newBench(t, 3, false)
	hit, stop := b.run(t, "pause-node", "all")
	defer stop()
	if got := len(strings.Split(hit, ",")); got != 3 {
		t.Fatalf("paused %q, want all 3 servers", hit)
	}
	for _, n := range b.nodes {
		if !eventually(n.Process().Stopped) {
			t.Fatalf("%s not stopped", n.Name)
		}
	}
	b.waitStopped(t)
	stop()
	b.assertQuiet(t)
}
