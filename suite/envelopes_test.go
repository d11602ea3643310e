package suite

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseEnvelopes: the block gives every design the same settings and
// skips faults that do not apply to a design, as a matrix does.
func TestParseEnvelopes(t *testing.T) {
	src := `
defaults:
  ttl: 2s
  clients: 4
  seeds: [7]
envelopes:
  designs: [redis-single, redis-lockdelay, etcd]
  faults: [pause-holder, clock-bump]
  seeds: 3
  points: 6
`
	f, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range f.Sweeps {
		got = append(got, s.Name()+":"+string(s.Options.Vary))
		o := s.Options
		if time.Duration(o.Base.TTL) != 2*time.Second || o.Base.Clients != 4 || o.Seeds != 3 || o.MaxPoints != 6 || o.Base.Seed != 1 {
			t.Errorf("%s: settings not the file's: %+v", s.Name(), o)
		}
	}
	// clock-bump acts on Redis servers only: etcd has no such sweep.
	want := "envelope-redis-single-pause-holder:pause envelope-redis-single-clock-bump:clock " +
		"envelope-redis-lockdelay-pause-holder:lockdelay envelope-redis-lockdelay-clock-bump:clock envelope-etcd-pause-holder:pause"
	if strings.Join(got, " ") != want {
		t.Errorf("sweeps:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if len(f.Scenarios) != 0 {
		t.Errorf("an envelopes-only file has no scenarios, got %d", len(f.Scenarios))
	}
}

func TestParseEnvelopeErrors(t *testing.T) {
	block := func(lines ...string) string { return "envelopes:\n  " + strings.Join(lines, "\n  ") + "\n" }
	cases := []struct{ name, src, want string }{
		{"no designs", block("faults: [pause-holder]"), "s.yaml:1: envelopes.designs: missing"},
		{"no faults", block("designs: all"), "s.yaml:1: envelopes.faults: missing: give a list of faults to sweep (sweepable: "},
		{"unknown design", block("designs: [redis-9]", "faults: [pause-holder]"), `s.yaml:2: envelopes.designs: unknown impl "redis-9"`},
		{"no size to sweep", block("designs: [redis-replicated]", "faults: [failover]"), "s.yaml:3: envelopes.faults: fault failover has no single size to sweep (sweepable: "},
		{"applies to none", block("designs: [etcd]", "faults: [clock-bump]"), "s.yaml:3: envelopes.faults: fault clock-bump applies to none of the envelopes' designs"},
		{"bad seeds", block("designs: all", "faults: [pause-holder]", "seeds: 0"), `s.yaml:4: envelopes.seeds: want a whole number of at least 1, got "0"`},
		{"one point", block("designs: all", "faults: [pause-holder]", "points: 1"), "s.yaml:1: envelopes.points: a sweep judges at least the 2 ends"},
		{"unknown field", block("designs: all", "faults: [pause-holder]", "hold_min: 1s"), "s.yaml:4: envelopes.hold_min: unknown field (valid: designs, faults, seeds, points"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.src))
			var se *Error
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got  %v\nwant %s…", err, tc.want)
			}
		})
	}
}

// TestShardSweeps: every sweep of a file goes to exactly one shard, the
// same whatever the order the file lists them in.
func TestShardSweeps(t *testing.T) {
	f, err := Load("../suites/compare-seeds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 4, 7} {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			s := Shard{Index: i, Count: n}
			reversed := slices.Clone(f.Sweeps)
			slices.Reverse(reversed)
			a, b := s.pickSweeps(f.Sweeps), s.pickSweeps(reversed)
			if len(a) != len(b) {
				t.Fatalf("shard %s: %d sweeps, %d when listed backwards", s, len(a), len(b))
			}
			for k := range a {
				if a[k].Name() != b[k].Name() {
					t.Fatalf("shard %s depends on the file's order", s)
				}
				seen[a[k].Name()]++
			}
			if len(a) > (len(f.Sweeps)+n-1)/n {
				t.Errorf("shard %s: %d of %d sweeps", s, len(a), len(f.Sweeps))
			}
		}
		if len(seen) != len(f.Sweeps) {
			t.Fatalf("%d shards cover %d of %d sweeps", n, len(seen), len(f.Sweeps))
		}
		for name, k := range seen {
			if k != 1 {
				t.Errorf("%d shards: %s in %d shards", n, name, k)
			}
		}
	}
}
