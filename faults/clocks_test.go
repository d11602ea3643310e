package faults

import (
	"strings"
	"testing"

	"github.com/locktest/locktest/impls"
)

// TestServerClockApplies: the clock faults ask only the servers' binaries
// whether the shim can move their clocks. An exec design's program is a
// client (python3 reads its clock however it likes) and must not stand in
// the way of moving the Redis servers it talks to.
func TestServerClockApplies(t *testing.T) {
	execOn := func(servers string) impls.Design {
		d, err := impls.ExecDesign("python3 mylock.py", servers)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	registered := func(name string) impls.Design {
		d, err := impls.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cases := []struct {
		name   string
		design impls.Design
		refuse string // "" = applies; else a word of the refusal
	}{
		{"redis-single", registered("redis-single"), ""},
		{"redis-replicated", registered("redis-replicated"), ""},
		{"etcd", registered("etcd"), "etcd"},
		{"exec on redis-single", execOn("redis-single"), ""},
		{"exec on redis-replicated", execOn("redis-replicated"), ""},
		{"exec on etcd", execOn("etcd"), "etcd"},
		{"exec on zookeeper", execOn("zookeeper"), "java"},
	}
	for _, name := range []string{"clock-bump", "clock-strobe"} {
		f, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			err := f.Applies(tc.design, Workload{Name: "counter", Resource: true})
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("%s on %s: refused: %v", f.Name(), tc.name, err)
			case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
				t.Errorf("%s on %s: %v, want a refusal naming %s", f.Name(), tc.name, err, tc.refuse)
			case err != nil && strings.Contains(err.Error(), "python3"):
				t.Errorf("%s on %s: the refusal names the client program: %v", f.Name(), tc.name, err)
			}
		}
	}
}
