package tests

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/reports"
)

// TestSessionsOverARun: real runs of redis-single and of etcd under
// pause-holder sample each server's own count of its sessions (Redis's
// connected clients, etcd's leases) with the run's figures: the count
// rises while the clients run and is back where it began once they
// closed, so no leak is found; the last sample has the run's operations
// and strikes; the summary names the counts.
func TestSessionsOverARun(t *testing.T) {
	cases := []struct {
		impl string
		// counted: the design's server whose sessions are counted, and
		// what it counts.
		counted, what string
	}{
		{"redis-single", "redis-0", "connected clients"},
		{"etcd", "etcd-0", "leases"},
	}
	for _, tc := range cases {
		t.Run(tc.impl, func(t *testing.T) {
			r := locktest(t, "run", "--impl", tc.impl, "--workload", "counter", "--fault", "pause-holder",
				"--clients", "4", "--duration", "6s", "--seed", "1", "--fault-interval", "2s")
			r.assertNothingLeft(t)
			if r.code != 0 && r.code != 1 {
				t.Fatalf("exit %d", r.code)
			}
			res := r.results(t)
			if res.Resources == nil {
				t.Fatal("results.json has no resources")
			}
			var found bool
			for _, p := range res.Resources.Procs {
				ss := p.Sessions
				if p.Name == tc.counted {
					found = true
					if ss == nil || ss.What != tc.what || ss.Peak == 0 {
						t.Errorf("%s: sessions %+v, want %s counted, some while the clients ran", p.Name, ss, tc.what)
					}
				}
				if ss != nil && (ss.Start != ss.End || ss.Leaked != 0) {
					t.Errorf("%s: %s %d at the start, %d at the end (leaked %d): want as many", p.Name, ss.What, ss.Start, ss.End, ss.Leaked)
				}
			}
			if !found {
				t.Errorf("no %s in the resources: %+v", tc.counted, res.Resources.Procs)
			}
			for _, l := range res.Resources.Leaks {
				t.Errorf("leak found: %s", l)
			}
			samples, err := reports.ReadSamples(filepath.Join(r.store, "latest"))
			if err != nil {
				t.Fatal(err)
			}
			if last := samples[len(samples)-1].Run; last == nil || last.Ops == 0 || last.Strikes == 0 {
				t.Errorf("the last sample's run figures: %+v, want the run's operations and strikes", last)
			}
			if !strings.Contains(r.stdout, ", "+tc.what+" ") {
				t.Errorf("the summary names no %s:\n%s", tc.what, r.stdout)
			}
		})
	}
}
