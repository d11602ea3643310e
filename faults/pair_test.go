package faults

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/scenario"
)

// TestLookupItem: a pair is looked up as its two faults, and a pair that
// cannot strike together is refused with a line naming why.
func TestLookupItem(t *testing.T) {
	for _, tc := range []struct {
		item string
		want []string // names, or nil when refused
		why  string   // part of the refusal
	}{
		{"latency", []string{"latency"}, ""},
		{"reply-latency+pause-acquire", []string{"reply-latency", "pause-acquire"}, ""},
		{"partition+clock-bump", []string{"partition", "clock-bump"}, ""},
		{"pause-holder+client-clock-skew", []string{"pause-holder", "client-clock-skew"}, ""},
		{"latency+latency", nil, "with itself"},
		{"none+latency", nil, "injects nothing"},
		{"latency+none", nil, "injects nothing"},
		{"a+b+c", nil, "joins 3 faults"},
		{"latency+", nil, "two fault names"},
		{"latency+nosuch", nil, "nosuch"},
		{"pause-holder+kill-holder", nil, "both seize a client process"},
		{"kill-node+pause-node", nil, "both seize server processes"},
		{"clock-bump+clock-strobe", nil, "both seize servers' clocks"},
		{"latency+reply-latency", nil, "both sized by --latency"},
		{"failover+latency", nil, "schedule of its own"},
		{"partition+redlock-restart", nil, "schedule of its own"},
	} {
		fs, err := LookupItem(tc.item)
		if tc.want == nil {
			if err == nil || !strings.Contains(err.Error(), tc.why) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: want one line refusing it (%q), got %v", tc.item, tc.why, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.item, err)
			continue
		}
		var names []string
		for _, f := range fs {
			names = append(names, f.Name())
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: got %v, want %v", tc.item, names, tc.want)
		}
	}
}

// TestPairSizes: each fault of a pair has its own size, the first's in
// --fault-duration (or its own setting), the second's in --fault-duration2,
// and SizeOf reads back what SetSize set.
func TestPairSizes(t *testing.T) {
	pause, _ := Lookup("pause-holder")
	lat, _ := Lookup("latency")
	kill, _ := Lookup("kill-node")
	c := scenario.Defaults()
	c.Faults = []string{"pause-holder+kill-node"}
	SetSize(&c, pause, 1500*time.Millisecond)
	SetSize(&c, kill, 300*time.Millisecond)
	if c.FaultDuration != scenario.Duration(1500*time.Millisecond) || c.FaultDuration2 != scenario.Duration(300*time.Millisecond) {
		t.Fatalf("durations %v and %v: want 1.5s for the first and 300ms for the second", c.FaultDuration, c.FaultDuration2)
	}
	if SizeOf(c, pause) != 1500*time.Millisecond || SizeOf(c, kill) != 300*time.Millisecond {
		t.Fatalf("sizes read back %v, %v", SizeOf(c, pause), SizeOf(c, kill))
	}
	if Own(c, kill).FaultDuration != c.FaultDuration2 || Own(c, pause).FaultDuration != c.FaultDuration {
		t.Fatal("Own gives a pair's second fault its own length")
	}
	c.Faults = []string{"pause-holder+latency"}
	SetSize(&c, lat, 700*time.Millisecond)
	if c.Latency != scenario.Duration(700*time.Millisecond) || c.FaultDuration2 != c.Latency || c.FaultDuration != scenario.Duration(1500*time.Millisecond) {
		t.Fatalf("latency as second: latency %v, lengths %v/%v", c.Latency, c.FaultDuration, c.FaultDuration2)
	}
}

// TestPairStrikesTogether: the two sides of a pair begin each strike
// together (the follower waits for the leader's quiet time), share the
// strike's holder, and a new strike begins only once both are ready.
func TestPairStrikesTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	grants := make(chan int, 10)
	await := func(ctx context.Context, moment string) (int, error) {
		select {
		case c := <-grants:
			return c, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	first, second := Pair()
	lead := &Env{Rand: rand.New(rand.NewPCG(1, 2)), Interval: 200 * time.Millisecond, Await: await, Pair: first, Target: Target{Spec: "holder"}}
	follow := &Env{Rand: rand.New(rand.NewPCG(3, 4)), Interval: time.Hour, Await: await, Pair: second, Target: Target{Spec: "holder"}}
	type began struct {
		at     time.Time
		client int
	}
	got := make(chan began, 2)
	strike := func(e *Env) {
		if !e.next(ctx) {
			t.Error("next ended before the strike")
			got <- began{}
			return
		}
		c, err := e.pickClient(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- began{time.Now(), c}
	}
	go strike(follow) // its own hour-long quiet time must not count
	go strike(lead)
	time.Sleep(50 * time.Millisecond)
	grants <- 3 // the strike waits for no moment: both hit this holder
	a, b := <-got, <-got
	if d := a.at.Sub(b.at).Abs(); d > 100*time.Millisecond {
		t.Errorf("the two strikes began %v apart", d)
	}
	if a.client != 3 || b.client != 3 {
		t.Errorf("the pair hit clients %d and %d, want the holder 3 both", a.client, b.client)
	}
	// The leader cannot begin another strike before the follower is ready.
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if lead.next(short) {
		t.Error("the leader struck again while its partner was still striking")
	}
}
