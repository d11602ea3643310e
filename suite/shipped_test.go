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

// TestFullCoversEverything: full.yaml runs every registered design against
// every registered fault that applies to it, so a new design or fault
// cannot go untested.
func TestFullCoversEverything(t *testing.T) {
	f := loadShipped(t, "full")
	covered := map[[2]string]bool{}
	for _, sc := range f.Scenarios {
		for _, fault := range sc.Runs[0].Config.Faults {
			covered[[2]string{sc.Runs[0].Impl, fault}] = true
		}
	}
	for _, d := range impls.All() {
		if d.Name == impls.ExecName {
			continue // the user's own design: what it does depends on their program
		}
		for _, fault := range faults.All() {
			if fault.Applies(d, "counter") != nil || fault.Name() == "test-picky" {
				continue
			}
			if !covered[[2]string{d.Name, fault.Name()}] {
				t.Errorf("suites/full.yaml has no scenario of impl %s with fault %s", d.Name, fault.Name())
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
