package suite

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktest/locktest/runner"
)

// Shard names one part of a suite split across machines (CI jobs) that
// run at once: part Index of Count, counted from 1.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Runs is how many scenario × seed pairs the whole suite has, so that a
	// merge knows from any one shard how many the complete suite makes.
	Runs int `json:"runs"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads a --shard value, "i/n" with 1 ≤ i ≤ n.
func ParseShard(v string) (Shard, error) {
	is, ns, ok := strings.Cut(v, "/")
	i, errI := strconv.Atoi(is)
	n, errN := strconv.Atoi(ns)
	if !ok || errI != nil || errN != nil {
		return Shard{}, fmt.Errorf("%q is not i/n, e.g. 2/4 for the second of four shards", v)
	}
	if n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%q: want 1 ≤ i ≤ n, e.g. 1/%d … %d/%d", v, max(n, 2), max(n, 2), max(n, 2))
	}
	return Shard{Index: i, Count: n}, nil
}

// pick keeps the shard's part of every selected run, all, and records
// their number in s.Runs.
func (s *Shard) pick(all []job) ([]job, error) {
	if s.Count > len(all) {
		return nil, &runner.BadConfigError{Err: fmt.Errorf("--shard %s: the suite selects %d runs, so at most %d shards", s, len(all), len(all))}
	}
	s.Runs = len(all)
	var mine []job
	for i, sh := range assignShards(all, s.Count) {
		if sh == s.Index-1 {
			mine = append(mine, all[i])
		}
	}
	return mine, nil
}

// pickSweeps keeps the shard's part of the selected sweeps: by name, the
// k-th goes to shard k mod n, so that every shard computes the same split.
func (s *Shard) pickSweeps(all []Sweep) []Sweep {
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b Sweep) int { return cmp.Compare(a.Name(), b.Name()) })
	var mine []Sweep
	for k, sw := range sorted {
		if k%s.Count == s.Index-1 {
			mine = append(mine, sw)
		}
	}
	return mine
}

// runOverhead is what a run costs beyond its duration: starting its
// servers and worker processes, the final read, the checks and the
// reports. The quick suite's runs took 0.6–4.9 s more than their duration
// on 2 loaded cores (median 0.8 s; Sentinel's designs the most). Erring
// long weighs short runs a little more, toward equal counts; only the
// relative sizes matter.
const runOverhead = 4 * time.Second

// expected is how long a run should take, from its settings alone. A run
// that stops at the violation it must find takes a fraction of its limit:
// in suites/full.yaml's measurement the first violations came at 0.1–9.8 s
// of 10 s, most of them before 6 s.
func (j job) expected() time.Duration {
	d := time.Duration(j.cfg.Duration)
	if len(j.cfg.StopOnViolation) > 0 && j.sc.Expect.needsViolation() {
		d = min(d, 6*time.Second)
	}
	return d + runOverhead
}

// assignShards gives each job (by its position) the shard, counted from 0,
// of n that runs it. The assignment depends only on the jobs' names, seeds
// and settings, never on their order or the machine, so that every shard
// of a CI matrix computes the same split on its own. Longest runs go first,
// each to the shard expected to finish earliest (the lowest-numbered on a
// tie) that holds fewer than ⌈N/n⌉ runs: shards balanced by expected wall
// time, none with more than its share of runs.
func assignShards(jobs []job, n int) []int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ja, jb := jobs[a], jobs[b]
		return cmp.Or(cmp.Compare(jb.expected(), ja.expected()), cmp.Compare(ja.sc.Name, jb.sc.Name),
			cmp.Compare(ja.cfg.Seed, jb.cfg.Seed))
	})
	limit := (len(jobs) + n - 1) / n
	load := make([]time.Duration, n)
	count := make([]int, n)
	shard := make([]int, len(jobs))
	for _, i := range order {
		best := -1
		for s := range n {
			if count[s] < limit && (best < 0 || load[s] < load[best]) {
				best = s
			}
		}
		shard[i] = best
		load[best] += jobs[i].expected()
		count[best]++
	}
	return shard
}
