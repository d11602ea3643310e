package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/reports"
)

// writeSamples writes samples into the run directory rel of store.
func writeSamples(t *testing.T, store, rel string, samples []reports.Sample) {
	t.Helper()
	var b []byte
	for _, s := range samples {
		line, _ := json.Marshal(s)
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(store, rel, reports.SamplesFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFigures: a run's page, in progress and checked, shows its figures
// over time from its samples: lost updates and strikes that hit, memory,
// and sessions where a server counts them, as charts and as a table; a
// name from the samples is escaped; a run without samples shows none.
func TestFigures(t *testing.T) {
	s := newTestStore(t)
	n := func(v int) *int { return &v }
	const mb = 1 << 20
	// Three samples 30 s apart: a lease taken and kept, a lost update and
	// two strikes, one of which hit.
	samples := []reports.Sample{
		{Time: 0, Procs: []reports.ProcSample{{Name: reports.CoordinatorName, RSS: 40 * mb},
			{Name: "etcd-0", Kind: "etcd", RSS: 20 * mb, Sessions: n(0), SessionsWhat: "leases"},
			{Name: "<script>alert(1)</script>", Kind: "etcd", RSS: 21 * mb}}, Run: &reports.RunFigures{}},
		{Time: 30e9, Procs: []reports.ProcSample{{Name: reports.CoordinatorName, RSS: 44 * mb},
			{Name: "etcd-0", Kind: "etcd", RSS: 24 * mb, Sessions: n(5), SessionsWhat: "leases"},
			{Name: "<script>alert(1)</script>", Kind: "etcd", Error: "not running"}}, Run: &reports.RunFigures{Ops: 900, Lost: 1, Strikes: 2, Effective: 1}},
		{Time: 60e9, Procs: []reports.ProcSample{{Name: reports.CoordinatorName, RSS: 46 * mb},
			{Name: "etcd-0", Kind: "etcd", RSS: 25 * mb, Sessions: n(1), SessionsWhat: "leases"},
			{Name: "<script>alert(1)</script>", Kind: "etcd", RSS: 22 * mb}}, Run: &reports.RunFigures{Ops: 1800, Lost: 1, Strikes: 2, Effective: 1}},
	}
	writeSamples(t, s.dir, s.running, samples)
	writeSamples(t, s.dir, s.done, samples)
	srv, err := New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	figures := []string{`<h2 id="figures">Over time</h2>`,
		"lost updates so far <small>(0–1)</small>", "fault strikes <small>(0–2)</small>", "memory (RSS), MB <small>(0–46)</small>",
		"sessions, as each server counts them <small>(0–5)</small>",
		// The lost line: 0 at the start, 1 (the top) after 30 s and at 60 s.
		`points="0.0,60.0 150.0,0.0 300.0,0.0"`,
		// The leases: 0, 5 (the top), 1.
		`points="0.0,60.0 150.0,0.0 300.0,48.0"`,
		// A line breaks where its server was not read: two points.
		`points="0.0,32.6 300.0,31.3"`,
		"etcd-0 (leases) 1",
		`<th class="num">etcd-0 sessions</th>`,
		`<td class="num">30.0 s</td><td class="num">900</td><td class="num">1</td><td class="num">1/2</td><td class="num">44</td><td class="num">24</td><td class="num"></td><td class="num">5</td>`,
		"&lt;script&gt;alert(1)&lt;/script&gt; MB"}
	cases := []struct {
		name, page string
		want, not  []string
	}{
		{"in progress", "/_/run/" + s.running, figures, []string{"<script>alert"}},
		{"checked", "/_/run/" + s.done, figures, []string{"<script>alert"}},
		{"no samples", "/_/run/" + s.stopped, nil, []string{"Over time"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := get(t, srv, tc.page)
			if code != 200 {
				t.Fatalf("status %d:\n%s", code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("lacks %q", w)
				}
			}
			for _, w := range append(tc.not, "%!", "<no value>", "ZgotmplZ") {
				if strings.Contains(body, w) {
					t.Errorf("holds %q", w)
				}
			}
			if t.Failed() {
				t.Log(body)
			}
		})
	}
}
