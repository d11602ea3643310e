package suite

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
)

// counter is the default workload as faults see it.
var counter = faults.Workload{Name: "counter", Resource: true}

// The suites the project ships must load.
func loadShipped(t *testing.T, name string) *File {
	t.Helper()
	f, err := Load(fmt.Sprintf("../suites/%s.yaml", name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFullCoversEverything: full.yaml's matrix runs every registered
// design against every registered fault that applies to it, so a new design
// or fault is tested without a line of YAML.
func TestFullCoversEverything(t *testing.T) {
	f := loadShipped(t, "full")
	cells := map[Cell]bool{}
	for _, c := range f.Matrix {
		cells[c] = true
	}
	runs := map[Cell]bool{}
	for _, sc := range f.Scenarios {
		if r := sc.Runs[0]; len(r.Config.Faults) == 1 && sc.Name == (Cell{r.Impl, r.Config.Faults[0]}).Name() {
			runs[Cell{r.Impl, r.Config.Faults[0]}] = true
		}
	}
	for _, d := range impls.All() {
		if d.Name == impls.ExecName {
			continue // the user's own design: what it does depends on their program
		}
		for _, fault := range faults.All() {
			c := Cell{d.Name, fault.Name()}
			switch {
			case fault.Applies(d, counter) != nil:
			case !cells[c]:
				t.Errorf("the matrix of suites/full.yaml has no cell %s × %s", c.Design, c.Fault)
			case !runs[c]:
				t.Errorf("suites/full.yaml has no scenario %s running the cell %s × %s", c.Name(), c.Design, c.Fault)
			}
		}
	}
}

// quickRows are the docs/anomalies.md rows quick.yaml must encode, each with
// the designs and faults it needs, which must all be registered.
var quickRows = []struct {
	row   string
	impls []string
	fault []string
}{
	{"1", []string{"redis-single"}, []string{"pause-holder"}},
	{"2", []string{"redis-single-fenced"}, []string{"pause-holder"}},
	{"3", []string{"redis-single", "redis-single-fenced"}, []string{"slow-resource-write"}},
	{"6", []string{"redis-replicated"}, []string{"failover"}},
	{"8", []string{"redlock"}, []string{"redlock-clock-jump"}},
	{"11", []string{"redlock"}, []string{"pause-holder"}},
	{"13", []string{"etcd"}, []string{"pause-holder"}},
	{"20", nil, []string{"none"}},
}

func TestQuickEncodesCoreRows(t *testing.T) {
	f := loadShipped(t, "quick")
	var rows []string
	for _, sc := range f.Scenarios {
		rows = append(rows, sc.Anomalies...)
	}
	for _, q := range quickRows {
		// A design or fault of a core row that is gone is a row the quick
		// suite silently stopped checking: fail, never skip.
		for _, d := range q.impls {
			if _, err := impls.Lookup(d); err != nil {
				t.Errorf("row %s: %v", q.row, err)
			}
		}
		for _, fault := range q.fault {
			if _, err := faults.Lookup(fault); err != nil {
				t.Errorf("row %s: %v", q.row, err)
			}
		}
		if !slices.Contains(rows, q.row) {
			t.Errorf("suites/quick.yaml encodes no scenario of docs/anomalies.md row %s (%v under %v)", q.row, q.impls, q.fault)
		}
	}
}

// catalogueRow is a row of docs/anomalies.md's table: its number and the
// scenario names its suite-entry column cites.
type catalogueRow struct {
	row       string
	scenarios []string
}

var (
	tableRow     = regexp.MustCompile(`^\| (\d+) \|`)
	codeSpan     = regexp.MustCompile("`([^`]*)`")
	scenarioName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)+$`)
)

// readCatalogue parses the table of docs/anomalies.md. The suite-entry
// column is the sixth; code spans in it that look like scenario names are
// citations (commands and field names do not).
func readCatalogue(t *testing.T) []catalogueRow {
	t.Helper()
	b, err := os.ReadFile("../docs/anomalies.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []catalogueRow
	for _, line := range strings.Split(string(b), "\n") {
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 9 {
			t.Fatalf("docs/anomalies.md row %s has %d cells, want 7 (a | inside a cell?)", m[1], len(cells)-2)
		}
		r := catalogueRow{row: m[1]}
		for _, c := range codeSpan.FindAllStringSubmatch(cells[6], -1) {
			if scenarioName.MatchString(c[1]) {
				r.scenarios = append(r.scenarios, c[1])
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// TestCatalogueMatchesSuites: docs/anomalies.md numbers its rows 1, 2, …
// in order; every row a shipped scenario names exists; every row is shown
// by some scenario; and every scenario the catalogue cites exists and names
// that row. A renumbered row or a renamed scenario fails here, not in a
// reader's hands.
func TestCatalogueMatchesSuites(t *testing.T) {
	catalogue := readCatalogue(t)
	if len(catalogue) == 0 {
		t.Fatal("docs/anomalies.md has no table rows")
	}
	inCatalogue := map[string]bool{}
	for i, r := range catalogue {
		if want := strconv.Itoa(i + 1); r.row != want {
			t.Fatalf("docs/anomalies.md row %d is numbered %s", i+1, r.row)
		}
		inCatalogue[r.row] = true
	}
	scenarios := map[string][]string{} // name → rows, over the suites that cite rows
	shown := map[string]bool{}
	for _, name := range []string{"quick", "full", "libraries"} {
		for _, sc := range loadShipped(t, name).Scenarios {
			scenarios[sc.Name] = sc.Anomalies
			for _, row := range sc.Anomalies {
				shown[row] = true
				if !inCatalogue[row] {
					t.Errorf("suites/%s.yaml: %s names docs/anomalies.md row %s, which does not exist", name, sc.Name, row)
				}
			}
		}
	}
	for _, r := range catalogue {
		if !shown[r.row] {
			t.Errorf("docs/anomalies.md row %s: no scenario of suites/quick.yaml, full.yaml or libraries.yaml shows it", r.row)
		}
		if len(r.scenarios) == 0 {
			t.Errorf("docs/anomalies.md row %s cites no suite scenario", r.row)
		}
		for _, name := range r.scenarios {
			rows, ok := scenarios[name]
			switch {
			case !ok:
				t.Errorf("docs/anomalies.md row %s cites scenario %s, which no suite has", r.row, name)
			case !slices.Contains(rows, r.row):
				t.Errorf("docs/anomalies.md row %s cites scenario %s, whose anomaly is %v", r.row, name, rows)
			}
		}
	}
}

// docsPath is a reference to a file under docs/.
var docsPath = regexp.MustCompile(`docs/[A-Za-z0-9_-]+\.md`)

// TestDocsReferencesResolve: every docs/….md named anywhere in the
// repository (code comments, suites, scripts, README) exists.
func TestDocsReferencesResolve(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != ".." && (strings.HasPrefix(n, ".") && n != ".ci" && n != ".github" || n == "store" || n == "bin" || n == "out") {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, ref := range docsPath.FindAllString(string(b), -1) {
			if _, err := os.Stat(filepath.Join("..", ref)); err != nil {
				t.Errorf("%s names %s, which does not exist", path, ref)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every suite file shipped loads, and its scenarios resolve: a typo in
// one not run by any test (soak.yaml's hour-long runs) is caught here.
func TestShippedSuitesLoad(t *testing.T) {
	files, err := filepath.Glob("../suites/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("suites: %v %v", files, err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		if f := loadShipped(t, name); len(f.Scenarios) == 0 {
			t.Errorf("%s: no scenario", path)
		}
	}
}
