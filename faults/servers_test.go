package faults

import (
	"strings"
	"testing"
)

// TestCheckUserServers: which faults run against servers the user runs.
// Every fault follows what its traits say (and one that says nothing is
// refused); the table holds the faults as written to what they do.
func TestCheckUserServers(t *testing.T) {
	const (
		always   = "always"    // acts on clients or links only
		withPids = "with pids" // stops and continues servers
		never    = "never"     // kills, restarts, re-clocks or fails over servers
	)
	want := map[string]string{
		"none": always, "pause-client": always, "pause-holder": always, "pause-acquire": always,
		"pause-waiter": always, "pause-at": always, "kill-holder": always, "client-clock-skew": always, "latency": always,
		"partition": always, "reset-peer": always, "slow-resource-write": always, "reply-latency": always,
		"pause-node": withPids,
		"kill-node":  never, "clock-bump": never, "clock-strobe": never, "redlock-clock-jump": never,
		"redlock-restart": never, "failover": never,
	}
	for name := range want {
		if _, err := Lookup(name); err != nil {
			t.Errorf("the table names %s: %v", name, err)
		}
	}
	for _, f := range All() {
		w, ok := want[f.Name()]
		if !ok {
			w = map[ServerAct]string{ServersUntouched: always, ServersSignalled: withPids, ServersOwned: never}[f.Traits().Servers]
		}
		noPids, pids := CheckUserServers(f, false), CheckUserServers(f, true)
		got := never
		switch {
		case noPids == nil && pids == nil:
			got = always
		case pids == nil:
			got = withPids
		}
		if got != w {
			t.Errorf("%s runs against --servers %s, want %s (errors: %v; %v)", f.Name(), got, w, noPids, pids)
		}
		if pids != nil && !strings.Contains(pids.Error(), f.Name()) {
			t.Errorf("%s: the refusal does not name the fault: %v", f.Name(), pids)
		}
		if f.Traits().ServerClocks && got != never {
			t.Errorf("%s moves server clocks (the shim of servers locktest starts) yet runs against --servers", f.Name())
		}
	}
}
