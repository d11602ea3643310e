package checker

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/history/historytest"
)

// explainRecords checks recs record by record, then explains the check on
// a second reading of the stretches it needs, as analyze --no-report does
// a history file (there offsets are bytes, here indexes): the report and
// the metrics.
func explainRecords(t *testing.T, recs []history.Record, opt Options) (Report, Metrics) {
	t.Helper()
	c := NewChecker(opt)
	var places history.Places
	for i := range recs {
		places.Add(&recs[i], int64(i))
		if err := c.Add(&recs[i]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	e := c.Explainer(c.Report())
	next := 0
	for _, s := range e.Stretches() {
		for i := max(next, int(places.From(s[0]))); i < len(recs); i++ {
			if next = i; history.Past(recs[i].Time, s[1]) {
				break
			}
			e.Add(&recs[i])
			next = i + 1
		}
	}
	return e.Report(), c.Metrics()
}

// TestExplainerMatchesCheck: read twice, a history gets the report Check
// gives it whole (with the violations named, their times, the faults'
// efficacy and the lease class) and the metrics Measure gives it, on the
// stored run (12 pause-holder faults, lost updates) judged against leases
// of several lengths, and on generated histories with every planted
// anomaly.
func TestExplainerMatchesCheck(t *testing.T) {
	type tc struct {
		name string
		recs []history.Record
		opt  Options
		// capped: more stretches failed than the explainer looks at,
		// which its verdicts' notes say.
		capped bool
	}
	stored := historytest.ReadGz(t, storedRun)
	cases := []tc{}
	for _, ttl := range []time.Duration{0, 500 * time.Millisecond, 2 * time.Second, 10 * time.Second} {
		cases = append(cases, tc{fmt.Sprintf("stored run, ttl %s", ttl), stored, Options{TTL: ttl}, false})
	}
	cases = append(cases, tc{"stored run, 2 violations listed", stored, Options{TTL: 2 * time.Second, MaxViolations: 2}, true})
	rng := rand.New(rand.NewPCG(36, 36))
	for i := range 12 {
		g := historytest.Counter{Clients: 1 + rng.IntN(8), Keys: 1 + rng.IntN(3), Ops: 100 + rng.IntN(20_000), Seed: uint64(i),
			Overlaps: rng.IntN(4), Unknowns: rng.IntN(4), UnknownReleases: rng.IntN(3), LateOverlap: i%3 == 0}
		cases = append(cases, tc{fmt.Sprintf("%+v", g), g.Records(), Options{TTL: time.Second}, false})
	}
	invalid := 0
	for _, c := range cases {
		c.opt.Timeout = time.Minute
		want := Check(c.recs, c.opt)
		got, metrics := explainRecords(t, c.recs, c.opt)
		if want.Verdict(true) == Invalid {
			invalid++
		}
		if c.capped {
			for _, r := range []*Result{&got.Mutex, &got.Resource} {
				if !strings.HasPrefix(r.Note, "violations named, and the lease judged, from the first 2 stretches") {
					t.Errorf("%s: %s note %q, want it to say the stretches were capped", c.name, r.Check, r.Note)
				}
				r.Note = ""
			}
		}
		for _, pair := range []struct {
			what      string
			got, want any
		}{
			{"mutex", got.Mutex, want.Mutex}, {"resource", got.Resource, want.Resource}, {"stats", got.Stats, want.Stats},
			{"faults", got.Faults, want.Faults}, {"efficacy", got.Efficacy, want.Efficacy}, {"lease", got.Lease, want.Lease},
			{"start", got.Start, want.Start}, {"metrics", metrics, Measure(c.recs)},
		} {
			g, _ := json.Marshal(pair.got)
			w, _ := json.Marshal(pair.want)
			if string(g) != string(w) {
				t.Errorf("%s: %s\n%s\nwant\n%s", c.name, pair.what, g, w)
			}
		}
	}
	if invalid == 0 {
		t.Error("no history was invalid: nothing explained")
	}
}

// TestExplainerReadsItsStretches: a long valid history with a lost update
// planted near its end is explained from a second reading of its last
// stretch only, and its lost update named as Check names it.
func TestExplainerReadsItsStretches(t *testing.T) {
	recs := historytest.Counter{Clients: 8, Keys: 4, Ops: 300_000, Seed: 9, LateOverlap: true}.Records()
	c := NewChecker(Options{})
	for i := range recs {
		if err := c.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	e := c.Explainer(c.Report())
	stretches := e.Stretches()
	if len(stretches) == 0 {
		t.Fatal("no stretch to read: the planted lost update was not found")
	}
	read := 0
	for _, r := range recs {
		if r.Time >= stretches[0][0] {
			read++
		}
	}
	if read > len(recs)/4 {
		t.Errorf("the stretches from %s read %d of %d records: not only the end", Seconds(stretches[0][0], recs[0].Time), read, len(recs))
	}
	got, _ := explainRecords(t, recs, Options{})
	want := Check(recs, Options{})
	if g, w := fmt.Sprint(got.Resource.Violations), fmt.Sprint(want.Resource.Violations); g != w || len(want.Resource.Violations) != 1 {
		t.Errorf("resource violations %s, want %s (one)", g, w)
	}
}
