package suite

import (
	"fmt"
	"slices"
	"testing"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
)

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
			case fault.Applies(d, "counter") != nil:
			case !cells[c]:
				t.Errorf("the matrix of suites/full.yaml has no cell %s × %s", c.Design, c.Fault)
			case !runs[c]:
				t.Errorf("suites/full.yaml has no scenario %s running the cell %s × %s", c.Name(), c.Design, c.Fault)
			}
		}
	}
}

// quickRows are the docs/anomalies.md row quick.yaml must encode, each with the
// designs and faults it needs: a row is required as soon as they are
// registered.
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
		ready := true
		for _, d := range q.impls {
			_, err := impls.Lookup(d)
			ready = ready && err == nil
		}
		for _, fault := range q.fault {
			_, err := faults.Lookup(fault)
			ready = ready && err == nil
		}
		if !ready {
			t.Logf("row %s: waits for %v %v to be registered", q.row, q.impls, q.fault)
			continue
		}
		if !slices.Contains(rows, q.row) {
			t.Errorf("suites/quick.yaml encodes no scenario of docs/anomalies.md row %s (%v under %v)", q.row, q.impls, q.fault)
		}
	}
}
