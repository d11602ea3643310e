package explore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/seed"
	"github.com/locktest/locktest/suite"
	"github.com/locktest/locktest/workloads"
)

func mustFault(t *testing.T, name string) faults.Fault {
	t.Helper()
	f, err := faults.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDrawsStayInRanges: fresh and mutated points stay inside the ranges
// the coverage report states, and their configurations resolve.
func TestDrawsStayInRanges(t *testing.T) {
	base := scenario.Defaults()
	base.Impl = "redis-single"
	for _, name := range []string{"pause-holder", "kill-node", "latency", "slow-resource-write"} {
		f := mustFault(t, name)
		r := seed.Stream(1, seed.Explore, 0)
		k := fresh(r, f, nil, nil, nil, holdRange[1])
		for i := range 200 {
			if i%2 == 1 {
				k = mutate(r, k, f, nil, nil, holdRange[1])
			} else {
				k = fresh(r, f, nil, nil, nil, holdRange[1])
			}
			if k.FaultLen < faultLenRange[0] || k.FaultLen > faultLenRange[1] || k.Hold < holdRange[0] || k.Hold > holdRange[1] ||
				k.Clients < clientRange[0] || k.Clients > clientRange[1] || k.Keys < keyRange[0] || k.Keys > keyRange[1] {
				t.Fatalf("%s: point out of range: %s", name, k)
			}
			c := k.Config(base, 7)
			if d := time.Duration(c.Duration); d < 8*time.Second || d > 20*time.Second {
				t.Fatalf("%s: run length %s outside 8–20 s", name, d)
			}
			if c.HoldMax < c.HoldMin {
				t.Fatalf("%s: hold max %v below min %v", name, c.HoldMax, c.HoldMin)
			}
			if _, err := runner.Resolve(c); err != nil {
				t.Fatalf("%s: %s does not resolve: %v", name, k, err)
			}
		}
	}
}

// TestHolderTargetOffered: a fault that can hit the holder is offered the
// holder, so a watchdog design's pause can land on the client that holds.
func TestHolderTargetOffered(t *testing.T) {
	ts := targetsOf(mustFault(t, "pause-client"), nil)
	if !strings.Contains(strings.Join(ts, ","), "holder") {
		t.Fatalf("pause-client targets %v lack holder", ts)
	}
	ts = targetsOf(mustFault(t, "pause-node"), []string{"primary", "sentinel"})
	for _, want := range []string{"all", "primary"} {
		if !strings.Contains(strings.Join(ts, ","), want) {
			t.Fatalf("pause-node targets %v lack %s", ts, want)
		}
	}
}

// TestSmallerShrinks: every candidate is smaller in exactly the way it says.
func TestSmallerShrinks(t *testing.T) {
	c := scenario.Defaults()
	c.Clients, c.Keys, c.Duration, c.FaultDuration = 6, 3, scenario.Duration(16*time.Second), scenario.Duration(2*time.Second)
	cands := smaller(c)
	if len(cands) != 5 {
		t.Fatalf("want 5 candidates (duration, clients ×2, keys, fault), got %d", len(cands))
	}
	if !strings.HasPrefix(cands[0].what, "duration") || cands[0].cfg.Duration != scenario.Duration(8*time.Second) {
		t.Fatalf("first candidate should halve the run: %+v", cands[0])
	}
	for _, cd := range cands {
		n := cd.cfg
		if n.Clients > c.Clients || n.Keys > c.Keys || n.Duration > c.Duration || n.FaultDuration > c.FaultDuration {
			t.Fatalf("%s made something bigger", cd.what)
		}
	}
	c.Clients, c.Keys, c.Duration, c.FaultDuration = 2, 1, scenario.Duration(4*time.Second), scenario.Duration(10*time.Millisecond)
	if got := smaller(c); len(got) != 0 {
		t.Fatalf("a minimal scenario has nothing smaller, got %v", got)
	}
}

// parseCapsule writes rep's capsule and reads it back as suite run does.
func parseCapsule(t *testing.T, rep *Report) (*suite.File, []byte) {
	t.Helper()
	data, err := Capsule(rep)
	if err != nil {
		t.Fatal(err)
	}
	f, err := suite.Parse("capsule.yaml", data)
	if err != nil {
		t.Fatalf("capsule does not parse: %v\n%s", err, data)
	}
	return f, data
}

// TestCapsuleIsASuite: the capsule parses as a suite with one scenario
// that expects unsafe in any one of its seeds, carries the shrunk
// settings, and runs the failed seeds first and enough others that at the
// measured rate (3 of 4, taken as 3/5) all miss with under 1% chance:
// 0.4^6 = 0.004, where 5 seeds would be 0.010.
func TestCapsuleIsASuite(t *testing.T) {
	cfg := scenario.Defaults()
	cfg.Impl, cfg.Faults, cfg.Clients = "redis-single", []string{"pause-client"}, 3
	cfg.FaultTarget, cfg.FaultMoment = "holder", faults.MomentGrant
	cfg.HoldMin, cfg.HoldMax = scenario.Duration(300*time.Millisecond), scenario.Duration(350*time.Millisecond)
	rep := &Report{Impl: "redis-single", Seed: 3, Found: &Finding{Trial: 2, Config: cfg, Seeds: []int64{1, 2, 3, 4}, Failed: []int64{1, 2, 4},
		Steps: []ShrinkStep{{What: "as found", Kept: true}}}}
	f, data := parseCapsule(t, rep)
	if len(f.Scenarios) != 1 {
		t.Fatalf("want one scenario, got %d", len(f.Scenarios))
	}
	sc := f.Scenarios[0]
	if sc.Expect.Verdict != "unsafe" || !sc.Expect.AnySeed || len(sc.Runs) != 6 {
		t.Fatalf("want unsafe in any of 6 seeds, got %+v with %d runs\n%s", sc.Expect, len(sc.Runs), data)
	}
	var seeds []int64
	for _, r := range sc.Runs {
		seeds = append(seeds, r.Seed)
	}
	if !slices.Equal(seeds, []int64{1, 2, 4, 3, 5, 6}) {
		t.Errorf("seeds %v: want the failed ones first, then the judged, then new ones", seeds)
	}
	got := sc.Runs[0].Config
	if got.Clients != 3 || got.FaultMoment != faults.MomentGrant || got.FaultTarget != "holder" || got.HoldMin != cfg.HoldMin {
		t.Fatalf("capsule lost settings: %+v\n%s", got, data)
	}
}

// TestCoverageCounts: strikes are counted per moment and effect, and the
// ranges tried are the extremes of the trials.
func TestCoverageCounts(t *testing.T) {
	f := mustFault(t, "pause-holder")
	trials := []Trial{
		{Knobs: Knobs{Fault: "pause-holder", FaultLen: 0.5, Hold: 0.2, Clients: 2, Keys: 1, Target: "holder"}, Result: checker.Valid,
			Strikes: []Strike{{Moment: "grant", Effect: checker.Effective}, {Moment: "grant", Effect: checker.NoEffect}}},
		{Knobs: Knobs{Fault: "pause-holder", FaultLen: 3, Hold: 1, Clients: 6, Keys: 3, Fencing: workloads.FenceWrites}, Result: checker.Valid,
			Strikes: []Strike{{Moment: "", Effect: checker.Disturbed}}},
		{Knobs: Knobs{Fault: "other"}, Strikes: []Strike{{Moment: "grant", Effect: checker.Effective}}},
	}
	cov := coverage(trials, []faults.Fault{f})
	c := cov[0]
	if c.Trials != 2 || c.Strikes != 3 || c.Moments["grant"].Strikes != 2 || c.Moments["grant"].Effective != 1 ||
		c.Moments["any"].Disturbed != 1 {
		t.Fatalf("counts wrong: %+v grant=%+v", c, c.Moments["grant"])
	}
	if c.FaultLen != [2]float64{0.5, 3} || c.Clients != [2]int{2, 6} || c.Keys != [2]int{1, 3} {
		t.Fatalf("ranges wrong: %+v", c)
	}
	if strings.Join(c.Targets, ",") != "default,holder" {
		t.Fatalf("targets %v", c.Targets)
	}
	if len(c.Fencing) != 1 || c.Fencing[workloads.FenceWrites] != 1 {
		t.Fatalf("fencing trials %v, want writes 1 (a trial that drew none counts in neither)", c.Fencing)
	}
}

// TestFencingKnob: a search draws the resource's fencing only where the
// workload's data is on the resource node and the design may take tokens
// to it; a drawn fencing reaches the run, its reproduce command and the
// capsule.
func TestFencingKnob(t *testing.T) {
	cases := []struct {
		impl, workload string
		draws          bool
	}{
		{"redis-single-fenced", "counter", true},
		{"etcd-fenced", "counter", true},
		{"exec", "counter", true}, // a program's tokens are known only once it runs
		{"redis-single", "counter", false},
		{"etcd-txn", "counter", false}, // guarded transactions, no resource node
		{"redis-single-fenced", "mutex", false},
	}
	for _, tc := range cases {
		c := scenario.Config{Impl: tc.impl}
		if tc.impl == "exec" {
			c.ExecCmd, c.ExecServers = "true", "redis-single"
		}
		d, err := runner.LookupDesign(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := fencingsOf(d, tc.workload); (len(got) == 2) != tc.draws {
			t.Errorf("%s with %s: fencings %v, want drawn: %v", tc.impl, tc.workload, got, tc.draws)
		}
	}
	base := scenario.Defaults()
	base.Impl = "redis-single-fenced"
	k := fresh(seed.Stream(1, seed.Explore, 0), mustFault(t, "pause-holder"), nil, nil, nil, holdRange[1])
	k.Fencing = workloads.FenceWrites
	c := k.Config(base, 3)
	r, err := runner.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fencing != workloads.FenceWrites || !strings.Contains(r.Command(), "--fencing writes") ||
		!strings.Contains(k.String(), "fencing=writes") {
		t.Fatalf("fencing lost: config %q, command %s, knobs %s", r.Fencing, r.Command(), k)
	}
	f, data := parseCapsule(t, &Report{Impl: base.Impl, Found: &Finding{Config: c, Seeds: []int64{1}, Failed: []int64{1}}})
	if got := f.Scenarios[0].Runs[0].Config.Fencing; got != workloads.FenceWrites {
		t.Fatalf("capsule runs fencing %q, want writes:\n%s", got, data)
	}
}

// TestBanditTriesEachThenPromise: every fault is tried once before any
// twice, and then the one whose strikes took effect gets the trials.
func TestBanditTriesEachThenPromise(t *testing.T) {
	fs := []faults.Fault{mustFault(t, "pause-holder"), mustFault(t, "latency"), mustFault(t, "kill-node")}
	b := newBandit(fs)
	seen := map[string]bool{}
	for range fs {
		f := b.next()
		if seen[f.Name()] {
			t.Fatalf("%s tried twice before every fault once", f.Name())
		}
		seen[f.Name()] = true
		score := 0.0
		if f.Name() == "latency" {
			score = 1
		}
		b.record(f, score)
	}
	n := map[string]int{}
	for range 20 {
		f := b.next()
		n[f.Name()]++
		score := 0.0
		if f.Name() == "latency" {
			score = 1
		}
		b.record(f, score)
	}
	if n["latency"] <= n["pause-holder"] || n["latency"] <= n["kill-node"] || n["pause-holder"] == 0 {
		t.Fatalf("want most trials on the effective fault and some on the others, got %v", n)
	}
}

// TestUnderLease: once a search has found what every unfenced lease lock
// shows, its points fit the fault and the longest critical section inside
// the lease, so that a violation there is the lock's own.
func TestUnderLease(t *testing.T) {
	for _, k := range []Knobs{
		{FaultLen: 3, Hold: 1.5, HoldSpread: 0.3},
		{FaultLen: 0.9, Hold: 0.1, HoldSpread: 0.2},
		{FaultLen: 0.01, Hold: 0.5, HoldSpread: 0.3},
	} {
		u := k.underLease()
		if fit := u.FaultLen + u.Hold*(1+u.HoldSpread); fit >= 1 {
			t.Errorf("%+v: under the lease %+v still takes %.2f×TTL", k, u, fit)
		}
		if u.FaultLen < faultLenRange[0] || u.FaultLen > k.FaultLen || u.Hold > k.Hold {
			t.Errorf("%+v: under the lease %+v grew or left the range", k, u)
		}
	}
}

// TestUnknownWhenNothingJudged: a search none of whose trials could be
// judged says so, on the terminal and the page, instead of claiming a
// coverage no run gave; one judged trial is enough for "no violation".
func TestUnknownWhenNothingJudged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []checker.Verdict
		unknown bool
		says    string
	}{
		{"every trial unknown", []checker.Verdict{checker.Unknown, checker.Unknown}, true, "UNKNOWN   not one of 2 trials"},
		{"no trial at all", nil, true, "UNKNOWN   not one of 0 trials"},
		{"one judged", []checker.Verdict{checker.Unknown, checker.Valid}, false, "unknown   1 of 2 trials could not be judged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rep := &Report{Impl: "exec", Dir: dir}
			for i, v := range tc.results {
				rep.Trials = append(rep.Trials, Trial{N: i + 1, Result: v})
			}
			if rep.Unknown() != tc.unknown {
				t.Fatalf("Unknown() = %v, want %v", rep.Unknown(), tc.unknown)
			}
			var out strings.Builder
			Print(&out, rep)
			if !strings.Contains(out.String(), tc.says) {
				t.Errorf("printed %q, want %q", out.String(), tc.says)
			}
			if tc.unknown == strings.Contains(out.String(), "no violation found") {
				t.Errorf("printed %q", out.String())
			}
			if err := write(rep, Options{Out: dir}); err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(filepath.Join(dir, ReportHTML))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(page), "Unknown: not one of") != tc.unknown {
				t.Errorf("page says unknown = %v, want %v", !tc.unknown, tc.unknown)
			}
		})
	}
}

// TestReplaySeeds: a capsule replays the failed seeds first, then the
// other judging seeds, then new ones, enough that all miss together under
// missChance at the measured rate; a finding that failed on its own seed
// alone (none of the judging seeds) still replays that seed first.
func TestReplaySeeds(t *testing.T) {
	for _, tc := range []struct {
		name           string
		failed, judged []int64
		wantRate       float64
		wantN          int
		wantFirst      int64
	}{
		{"all judging seeds failed", []int64{1, 2, 3, 4, 5}, []int64{1, 2, 3, 4, 5}, 5.0 / 6, 3, 1},
		{"own seed only", []int64{777}, []int64{777, 1, 2}, 0.25, 17, 777},
		{"nothing failed", nil, []int64{1, 2}, 0, maxReplaySeeds, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rate, miss, seeds := (&Finding{Failed: tc.failed, Seeds: tc.judged}).replay()
			if rate != tc.wantRate || len(seeds) != max(tc.wantN, len(tc.judged)) || seeds[0] != tc.wantFirst {
				t.Fatalf("rate %.3f, %d seeds from %d; want %.3f, %d from %d", rate, len(seeds), seeds[0], tc.wantRate, tc.wantN, tc.wantFirst)
			}
			if rate > 0 && miss >= missChance && len(seeds) < maxReplaySeeds {
				t.Errorf("all %d seeds miss together with chance %.4f", len(seeds), miss)
			}
		})
	}
}

// TestPairDraws: a pair point keeps both faults' lengths in range, gives
// each its own length and target, and resolves as one item of the fault
// list; every drawable pair is one the runner accepts.
func TestPairDraws(t *testing.T) {
	base := scenario.Defaults()
	base.Impl = "redis-single"
	fs := []faults.Fault{mustFault(t, "pause-holder"), mustFault(t, "reply-latency"), mustFault(t, "latency"),
		mustFault(t, "kill-holder"), mustFault(t, "partition")}
	ps := partners(fs)
	if got := len(ps[mustFault(t, "pause-holder")]); got != 3 {
		t.Fatalf("pause-holder pairs with %d faults, want 3 (not itself, not kill-holder, which seizes a client process too)", got)
	}
	for _, g := range ps[mustFault(t, "latency")] {
		if g.Name() == "reply-latency" || g.Name() == "latency" {
			t.Fatalf("latency paired with %s", g.Name())
		}
	}
	r := seed.Stream(2, seed.Explore, 0)
	for f, gs := range ps {
		for _, g := range gs {
			k := fresh(r, f, g, nil, nil, holdRange[1])
			for i := range 20 {
				if i%2 == 1 {
					k = mutate(r, k, f, nil, nil, holdRange[1])
				}
				if k.Fault2 != g.Name() || k.FaultLen2 < faultLenRange[0] || k.FaultLen2 > faultLenRange[1] {
					t.Fatalf("pair point out of range or lost its pair: %s", k)
				}
				c := k.Config(base, 3)
				if len(c.Faults) != 1 || c.Faults[0] != f.Name()+"+"+g.Name() {
					t.Fatalf("%s: faults %v, want the pair as one item", k, c.Faults)
				}
				r1, err := runner.Resolve(c)
				if err != nil {
					t.Fatalf("%s does not resolve: %v", k, err)
				}
				if faults.SizeOf(c, g) < 10*time.Millisecond || faults.SizeOf(c, f) < 10*time.Millisecond || len(r1.Faults) != 2 {
					t.Fatalf("%s: sizes %v, %v", k, faults.SizeOf(c, f), faults.SizeOf(c, g))
				}
				if u := k.underLease(); u.FaultLen2+u.Hold*(1+u.HoldSpread) >= 1 {
					t.Fatalf("%s: under the lease the second fault does not fit: %+v", k, u)
				}
			}
		}
	}
}

// TestShrinkDropsEitherFault: the shrink of a pair tries each fault alone,
// with its own length and target, and both resolve.
func TestShrinkDropsEitherFault(t *testing.T) {
	c := scenario.Defaults()
	c.Impl, c.Faults, c.Clients, c.Duration = "redis-single", []string{"reply-latency+pause-holder"}, 2, scenario.Duration(4*time.Second)
	c.FaultTarget = "reply-latency=c1"
	c.Latency, c.FaultDuration, c.FaultDuration2 = scenario.Duration(400*time.Millisecond), scenario.Duration(400*time.Millisecond), scenario.Duration(1500*time.Millisecond)
	got := map[string]scenario.Config{}
	var sizes []string
	for _, cd := range smaller(c) {
		if strings.Contains(cd.what, "alone") {
			got[cd.cfg.Faults[0]] = cd.cfg
		} else {
			sizes = append(sizes, cd.what)
		}
	}
	lat, pause := got["reply-latency"], got["pause-holder"]
	if lat.FaultTarget != "c1" || lat.FaultDuration != scenario.Duration(400*time.Millisecond) || lat.FaultDuration2 != 0 {
		t.Errorf("reply-latency alone: target %q, length %v/%v", lat.FaultTarget, lat.FaultDuration, lat.FaultDuration2)
	}
	if pause.FaultTarget != "" || pause.FaultDuration != scenario.Duration(1500*time.Millisecond) || pause.FaultDuration2 != 0 {
		t.Errorf("pause-holder alone: target %q, length %v/%v, want its own length", pause.FaultTarget, pause.FaultDuration, pause.FaultDuration2)
	}
	for _, a := range []scenario.Config{lat, pause} {
		if _, err := runner.Resolve(a); err != nil {
			t.Errorf("%v alone does not resolve: %v", a.Faults, err)
		}
	}
	if strings.Join(sizes, "; ") != "latency 400ms → 280ms; fault-duration2 1.5s → 1.05s" {
		t.Errorf("size steps %q: want each fault's own size", sizes)
	}
}

// TestPairCoverageAndCapsule: a pair's trials get their own coverage
// entry with both lengths, and a capsule of a pair replays it as a suite.
func TestPairCoverageAndCapsule(t *testing.T) {
	k := Knobs{Fault: "reply-latency", Fault2: "pause-holder", FaultLen: 0.3, FaultLen2: 1.5, Hold: 0.2, Clients: 2, Keys: 1}
	cov := coverage([]Trial{{Knobs: k, Strikes: []Strike{{Moment: "grant", Effect: checker.Effective}}}},
		[]faults.Fault{mustFault(t, "reply-latency"), mustFault(t, "pause-holder")})
	if len(cov) != 3 || cov[2].Fault != "reply-latency+pause-holder" || cov[2].Trials != 1 || cov[2].FaultLen2 == nil ||
		*cov[2].FaultLen2 != [2]float64{1.5, 1.5} || cov[0].Trials != 0 {
		t.Fatalf("coverage %+v", cov)
	}
	base := scenario.Defaults()
	base.Impl = "redis-single"
	cfg := k.Config(base, 1)
	rep := &Report{Impl: "redis-single", Found: &Finding{Config: cfg, Seeds: []int64{1, 2}, Failed: []int64{1, 2}}}
	f, data := parseCapsule(t, rep)
	got := f.Scenarios[0].Runs[0]
	if !slices.Equal(got.Config.Faults, []string{"reply-latency+pause-holder"}) || got.FaultDuration2 != cfg.FaultDuration2 || len(got.Faults) != 2 {
		t.Fatalf("capsule lost the pair: %+v\n%s", got.Config, data)
	}
}

// TestCandidatesSplitPairs: a pair given to explore searches its two
// faults, which the search pairs itself.
func TestCandidatesSplitPairs(t *testing.T) {
	base := scenario.Defaults()
	base.Impl = "redis-single"
	fs, _, err := candidateFaults(base, []string{"latency+pause-holder"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Name() != "latency" || fs[1].Name() != "pause-holder" {
		t.Fatalf("candidates %v, want latency and pause-holder", fs)
	}
}

// TestPageShowsPairs: explore.html renders a pair's coverage with both
// lengths.
func TestPageShowsPairs(t *testing.T) {
	dir := t.TempDir()
	k := Knobs{Fault: "reply-latency", Fault2: "pause-holder", FaultLen: 0.3, FaultLen2: 1.5, Hold: 0.2, Clients: 2, Keys: 1}
	rep := &Report{Impl: "redis-single", PairShare: pairShare, Dir: dir, Trials: []Trial{{N: 1, Knobs: k}}}
	rep.Coverage = coverage(rep.Trials, nil)
	if err := write(rep, Options{Out: dir}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reply-latency&#43;pause-holder", "0.30–0.30 and 1.50–1.50", "paired (a+b, both faults at once) in 25%"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("explore.html lacks %q", want)
		}
	}
}

// TestBanditAddKeepsItsPlace: an arm added mid-search (plain contention,
// after a finding beyond the lease) is tried after the faults not yet
// tried, and the search does not start over from its first fault.
func TestBanditAddKeepsItsPlace(t *testing.T) {
	names := []string{"pause-holder", "kill-node", "partition", "latency"}
	var fs []faults.Fault
	for _, n := range names {
		fs = append(fs, mustFault(t, n))
	}
	b := newBandit(fs)
	for _, want := range names[:2] {
		f := b.next()
		if f.Name() != want {
			t.Fatalf("drew %s, want %s", f.Name(), want)
		}
		b.record(f, 1)
	}
	b.add(mustFault(t, faults.None))
	for _, want := range []string{"partition", "latency", faults.None} {
		f := b.next()
		if f.Name() != want {
			t.Fatalf("after add: drew %s, want %s (each untried fault once, the added one last)", f.Name(), want)
		}
		b.record(f, 0)
	}
}

// TestPageDrawsTheSearch: explore.html draws each trial on its fault's
// row along the search time, says which faults the budget never reached
// instead of ranges of zeros, and escapes what a trial's knobs say (a
// program's checkpoint name is the user's text).
func TestPageDrawsTheSearch(t *testing.T) {
	dir := t.TempDir()
	hostile := `<img src=x onerror=alert(1)>`
	rep := &Report{Impl: "exec", Dir: dir, Trials: []Trial{
		{N: 1, Wall: 12, Result: checker.Valid, Knobs: Knobs{Fault: "pause-at", Checkpoint: hostile, FaultLen: 1.2, Hold: 0.2, Clients: 3, Keys: 1},
			Strikes: []Strike{{Effect: checker.Effective}, {Effect: checker.NoEffect}}},
		{N: 2, Wall: 20, Result: checker.Invalid, Knobs: Knobs{Fault: "pause-holder", FaultLen: 1.5, Hold: 0.2, Clients: 3, Keys: 1}},
	}}
	rep.Coverage = coverage(rep.Trials, []faults.Fault{mustFault(t, "pause-at"), mustFault(t, "pause-holder"), mustFault(t, "kill-node")})
	if err := write(rep, Options{Out: dir}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<svg", `<g class="invalid">`, "t001 valid, 1 of 2 strikes took effect", "30 s",
		`<td>kill-node</td><td colspan="9">not tried: the budget ran out first</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("explore.html lacks %q", want)
		}
	}
	if strings.Contains(page, hostile) {
		t.Error("explore.html carries a checkpoint name as markup")
	}
}

// TestTrialCheckTimeout: a trial the resource's check decides bounds its
// mutual-exclusion check, so that one history with many unknown acquires
// does not eat the budget; a mutex trial, which that check decides, keeps
// the run's timeout.
func TestTrialCheckTimeout(t *testing.T) {
	k := Knobs{Fault: "pause-holder", FaultLen: 1.5, Hold: 0.2, Clients: 3, Keys: 1}
	for workload, want := range map[string]scenario.Duration{"counter": trialCheckTimeout, "mutex": scenario.Defaults().CheckTimeout} {
		base := scenario.Defaults()
		base.Impl, base.Workload = "redis-single", workload
		r, reason := k.resolve(base, 1, t.TempDir(), "t", false)
		if reason != "" || r.CheckTimeout != want {
			t.Errorf("%s: check timeout %v (%s), want %v", workload, r.CheckTimeout, reason, want)
		}
	}
}
