package checker

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
)

// checkRecords checks recs record by record.
func checkRecords(recs []history.Record, opt Options) (Report, error) {
	c := NewChecker(opt)
	var err error
	for i := range recs {
		if err = c.Add(&recs[i]); err != nil {
			break
		}
	}
	return c.Report(), err
}

// TestCheckerMatchesCheck: checked record by record, a history gets what
// Check gives it whole (verdicts, op counts, notes, what the
// visualizations draw, stats, faults), on generated histories with every
// planted anomaly, broken at random, and on the stored run, cut as small as
// the rules allow and as Check cuts.
func TestCheckerMatchesCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 34))
	histories := map[string][]history.Record{"stored run": historytest.ReadGz(t, storedRun)}
	for i := range 30 {
		g := historytest.Counter{Clients: 1 + rng.IntN(8), Keys: 1 + rng.IntN(3), Ops: 100 + rng.IntN(5000), Seed: uint64(i),
			Overlaps: rng.IntN(3), Unknowns: rng.IntN(4), UnknownReleases: rng.IntN(3), LateOverlap: i%3 == 0}
		recs := g.Records()
		if i%2 == 1 {
			for range 1 + rng.IntN(3) {
				recs = mutate(rng, recs)
			}
		}
		histories[fmt.Sprintf("#%d %+v", i, g)] = recs
	}
	histories["long, valid"] = historytest.Counter{Clients: 8, Keys: 3, Ops: 60_000, Seed: 1}.Records()
	histories["long, late overlap"] = historytest.Counter{Clients: 8, Keys: 2, Ops: 60_000, Seed: 2, LateOverlap: true, Unknowns: 3}.Records()
	histories["long, a write in flight for long"] = delayed(historytest.Counter{Clients: 8, Keys: 2, Ops: 60_000, Seed: 3}.Records(),
		history.FIncr, 3*history.AppendSkew)
	histories["long, a release in flight for long"] = delayed(historytest.Counter{Clients: 8, Keys: 2, Ops: 60_000, Seed: 4}.Records(),
		history.FRelease, 3*history.AppendSkew)
	histories["long, appended out of time order"] = jostled(rng, historytest.Counter{Clients: 8, Keys: 2, Ops: 30_000, Seed: 5,
		Overlaps: 3, Unknowns: 2, UnknownReleases: 1}.Records())
	kinds := map[Verdict]int{}
	for _, segMin := range []int{1, 200} {
		old := minSegment
		minSegment = segMin
		for name, recs := range histories {
			opt := Options{Timeout: time.Minute}
			want := Check(recs, opt)
			got, err := checkRecords(recs, opt)
			if err != nil {
				t.Errorf("segments of %d+, %s: %v", segMin, name, err)
				continue
			}
			for _, r := range []struct{ got, want Result }{{got.Mutex, want.Mutex}, {got.Resource, want.Resource}} {
				kinds[r.want.Verdict]++
				if r.got.Verdict != r.want.Verdict || r.got.Ops != r.want.Ops || r.got.Note != r.want.Note ||
					r.got.Visualized != r.want.Visualized || !sameOpsOf(r.got.viz, r.want.viz) {
					t.Errorf("segments of %d+, %s, %s: %s of %d ops (%q, draws %d segments: %q), want %s of %d (%q, %d: %q)",
						segMin, name, r.want.Check, r.got.Verdict, r.got.Ops, r.got.Note, len(r.got.viz), r.got.Visualized,
						r.want.Verdict, r.want.Ops, r.want.Note, len(r.want.viz), r.want.Visualized)
				}
			}
			if !reflect.DeepEqual(got.Stats, want.Stats) || !reflect.DeepEqual(got.Faults, want.Faults) || got.Start != want.Start {
				t.Errorf("segments of %d+, %s: stats %+v, faults %+v, start %d; want %+v, %+v, %d",
					segMin, name, got.Stats, got.Faults, got.Start, want.Stats, want.Faults, want.Start)
			}
		}
		minSegment = old
	}
	if kinds[Valid] == 0 || kinds[Invalid] == 0 {
		t.Errorf("verdicts %v: the comparison wants both valid and invalid checks", kinds)
	}
}

// TestCheckerRefusesLateRecords: an op whose invoke comes after ops of its
// key called more than history.AppendSkew after it were handed on cannot
// be placed; the checker says so rather than check it out of order.
func TestCheckerRefusesLateRecords(t *testing.T) {
	recs := historytest.Counter{Clients: 4, Keys: 1, Ops: 30_000, Seed: 1}.Records()
	first, last := recs[0], recs[len(recs)-1]
	if span := time.Duration(last.Time - first.Time); span < 2*history.AppendSkew {
		t.Fatalf("the history spans %s: too short to hand ops on before its end", span)
	}
	late := history.Record{Index: len(recs), Process: 0, Seq: 1 << 30, Type: history.Invoke, F: history.FAcquire,
		Key: first.Key, Time: first.Time + 1}
	for _, tc := range []struct {
		name string
		recs []history.Record
		want error
	}{
		{"in order", recs, nil},
		{"a late invoke", append(recs[:len(recs):len(recs)], late), ErrOutOfOrder},
	} {
		if _, err := checkRecords(tc.recs, Options{}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// delayed returns recs with the completion of an op of f, a quarter into
// the history, d later and moved to its time: an op in flight far longer
// than a record can be late.
func delayed(recs []history.Record, f string, d time.Duration) []history.Record {
	out := make([]history.Record, 0, len(recs))
	slow, placed := -1, false
	for i, r := range recs {
		if slow < 0 && i > len(recs)/4 && r.F == f && r.Type == history.OK {
			slow = i
			continue
		}
		if slow >= 0 && !placed && r.Time > recs[slow].Time+int64(d) {
			moved := recs[slow]
			moved.Time += int64(d)
			out, placed = append(out, moved), true
		}
		out = append(out, r)
	}
	for i := range out {
		out[i].Index = i
	}
	return out
}

// TestCheckFile: a history file checked as it is read gets what Check
// gives the records ReadFile reads, a cut-off one too.
func TestCheckFile(t *testing.T) {
	g := historytest.Counter{Clients: 8, Keys: 4, Ops: 30_000, Seed: 5, LateOverlap: true, Unknowns: 2, UnknownReleases: 2}
	var buf bytes.Buffer
	if err := g.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cut  int // bytes cut off the end
		want error
	}{
		{"whole", 0, nil},
		{"last line cut off", 10, history.ErrTruncated},
	} {
		path := filepath.Join(t.TempDir(), "history.jsonl")
		if err := os.WriteFile(path, buf.Bytes()[:buf.Len()-tc.cut], 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := history.ReadFile(path)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: ReadFile: %v, want %v", tc.name, err, tc.want)
		}
		want := Check(recs, Options{})
		got, err := CheckFile(path, Options{})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if got.Mutex.Verdict != want.Mutex.Verdict || got.Resource.Verdict != want.Resource.Verdict ||
			got.Mutex.Ops != want.Mutex.Ops || got.Resource.Ops != want.Resource.Ops || !reflect.DeepEqual(got.Stats, want.Stats) {
			t.Errorf("%s: mutex %s of %d, resource %s of %d, stats %+v; want %s of %d, %s of %d, %+v", tc.name,
				got.Mutex.Verdict, got.Mutex.Ops, got.Resource.Verdict, got.Resource.Ops, got.Stats,
				want.Mutex.Verdict, want.Mutex.Ops, want.Resource.Verdict, want.Resource.Ops, want.Stats)
		}
		if want.Resource.Verdict != Invalid {
			t.Errorf("%s: resource %s: the late overlap was not planted", tc.name, want.Resource.Verdict)
		}
	}
}

// jostled returns recs with each record moved up to 64 places, as records
// appended from many processes come out of time order (a completion may
// then come before its invoke, and be left unpaired).
func jostled(rng *rand.Rand, recs []history.Record) []history.Record {
	out := slices.Clone(recs)
	for i := range out {
		j := min(len(out)-1, i+rng.IntN(64))
		out[i], out[j] = out[j], out[i]
	}
	for i := range out {
		out[i].Index = i
	}
	return out
}

// TestCheckFileRefusesDamage: a history damaged into well-formed lines is
// refused with Validate's error, as analyze refuses it.
func TestCheckFileRefusesDamage(t *testing.T) {
	recs := historytest.Counter{Clients: 2, Keys: 1, Ops: 300, Seed: 1}.Records()
	recs[100].Index = 7 // a record moved
	var buf bytes.Buffer
	for i := range recs {
		buf.Write(append(history.AppendJSON(nil, &recs[i]), '\n'))
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want := history.Validate(recs)
	if want == nil {
		t.Fatal("Validate takes the damaged history")
	}
	if _, err := CheckFile(path, Options{}); err == nil || !strings.Contains(err.Error(), want.Error()) {
		t.Errorf("%v, want %v", err, want)
	}
}

// TestViolatedAsTheHistoryGrows: a Checker fed a history a batch at a time
// (as --stop-on-violation feeds it) reports the violation before the
// history ends, soon after the overlapping section, and a valid history
// never.
func TestViolatedAsTheHistoryGrows(t *testing.T) {
	for _, tc := range []struct {
		name string
		gen  historytest.Counter
		want bool
	}{
		{"valid", historytest.Counter{Clients: 5, Keys: 1, Ops: 20_000, Seed: 3}, false},
		{"a lost update", historytest.Counter{Clients: 5, Keys: 1, Ops: 20_000, Seed: 3, Overlaps: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.gen.Records()
			c := NewChecker(Options{Timeout: time.Minute})
			defer c.Report()
			seenAt := -1
			for i := range recs {
				if err := c.Add(&recs[i]); err != nil {
					t.Fatal(err)
				}
				if i%500 != 499 {
					continue
				}
				// Workers decide what is handed on: give them a moment.
				for range 10 {
					if _, resource := c.Violated(); resource {
						seenAt = i
						break
					}
					time.Sleep(time.Millisecond)
				}
				if seenAt >= 0 {
					break
				}
			}
			if got := seenAt >= 0; got != tc.want {
				t.Fatalf("violation seen: %v (at record %d of %d); want %v", got, seenAt, len(recs), tc.want)
			}
			if tc.want && seenAt == len(recs)-1 {
				t.Fatalf("seen only with the last record")
			}
		})
	}
}
