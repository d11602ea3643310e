package suite

import (
	"errors"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/runner"
)

func TestParseShard(t *testing.T) {
	cases := []struct {
		in   string
		want Shard
		err  string
	}{
		{"1/1", Shard{Index: 1, Count: 1}, ""},
		{"2/4", Shard{Index: 2, Count: 4}, ""},
		{"4/4", Shard{Index: 4, Count: 4}, ""},
		{"0/2", Shard{}, "want 1 ≤ i ≤ n"},
		{"3/2", Shard{}, "want 1 ≤ i ≤ n"},
		{"1/0", Shard{}, "want 1 ≤ i ≤ n"},
		{"-1/2", Shard{}, "want 1 ≤ i ≤ n"},
		{"abc", Shard{}, "is not i/n"},
		{"1/2/3", Shard{}, "is not i/n"},
		{"", Shard{}, "is not i/n"},
	}
	for _, tc := range cases {
		got, err := ParseShard(tc.in)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseShard(%q) error %v, want one containing %q", tc.in, err, tc.err)
		}
	}
}

// TestShardsPartition: for the shipped suites and several shard counts,
// every run goes to exactly one shard, no shard holds more than its share
// of runs, the split does not depend on the order of the runs (each CI job
// computes it alone), and the shards' expected times differ by at most the
// longest run.
func TestShardsPartition(t *testing.T) {
	for _, file := range []string{"../suites/quick.yaml", "../suites/full.yaml"} {
		f, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		all, err := f.jobs(Options{Out: t.TempDir(), Seeds: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 3, 4, 7, len(all)} {
			seen := map[int]int{} // job index → times picked
			var loads []time.Duration
			var longest time.Duration
			for i := 1; i <= n; i++ {
				s := Shard{Index: i, Count: n}
				mine, err := s.pick(all)
				if err != nil {
					t.Fatalf("%s shard %s: %v", file, s, err)
				}
				if s.Runs != len(all) {
					t.Errorf("%s shard %s: Runs %d, want %d", file, s, s.Runs, len(all))
				}
				if limit := (len(all) + n - 1) / n; len(mine) > limit {
					t.Errorf("%s shard %s: %d runs, more than its share %d", file, s, len(mine), limit)
				}
				var load time.Duration
				for _, j := range mine {
					seen[j.index]++
					load += j.expected()
					longest = max(longest, j.expected())
				}
				loads = append(loads, load)
			}
			for _, j := range all {
				if seen[j.index] != 1 {
					t.Errorf("%s, %d shards: %s seed %d runs in %d shards, want 1", file, n, j.sc.Name, j.cfg.Seed, seen[j.index])
				}
			}
			if spread := slices.Max(loads) - slices.Min(loads); spread > longest {
				t.Errorf("%s, %d shards: expected times %v differ by %v, more than the longest run (%v)", file, n, loads, spread, longest)
			}

			want := assignShards(all, n)
			shuffled := slices.Clone(all)
			rand.New(rand.NewPCG(uint64(n), 1)).Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
			for k, s := range assignShards(shuffled, n) {
				if i := shuffled[k].index; want[i] != s {
					t.Fatalf("%s, %d shards: %s seed %d goes to shard %d in file order, %d shuffled", file, n,
						all[i].sc.Name, all[i].cfg.Seed, want[i], s)
				}
			}
		}
		if _, err := (&Shard{Index: 1, Count: len(all) + 1}).pick(all); err == nil {
			t.Errorf("%s: %d shards of %d runs accepted", file, len(all)+1, len(all))
		}
	}
}

// TestJobsBounded: a selection past MaxRuns is refused before a single
// run is listed, whatever --seeds (a billion filled 2.4 GB in 21 s); at
// MaxRuns it is listed.
func TestJobsBounded(t *testing.T) {
	f, err := Load("../suites/quick.yaml")
	if err != nil {
		t.Fatal(err)
	}
	one := regexp.MustCompile(`^redis-single-none$`)
	for _, tc := range []struct {
		opt  Options
		runs int // 0: refused
	}{
		{Options{Filter: one, Seeds: MaxRuns}, MaxRuns},
		{Options{Filter: one, Seeds: MaxRuns + 1}, 0},
		{Options{Filter: one, Seeds: 1_000_000_000}, 0},
		{Options{Seeds: math.MaxInt}, 0},
		{Options{Seeds: MaxRuns / 2}, 0}, // every scenario of the suite
	} {
		tc.opt.Out = t.TempDir()
		jobs, err := f.jobs(tc.opt)
		var bad *runner.BadConfigError
		switch {
		case tc.runs > 0 && (err != nil || len(jobs) != tc.runs):
			t.Errorf("--seeds %d: %d runs (%v), want %d", tc.opt.Seeds, len(jobs), err, tc.runs)
		case tc.runs == 0 && (!errors.As(err, &bad) || !strings.Contains(err.Error(), "more than 10000 runs")):
			t.Errorf("--seeds %d: %d runs (%v), want a refusal", tc.opt.Seeds, len(jobs), err)
		}
	}
}
