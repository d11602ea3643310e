package runner

import (
	"errors"
	"maps"
	"slices"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/impls"
)

// Missing is what a design lacks on this machine before it can run its
// default workload: the server programs not found (binary → the Debian
// package that provides it), and what its own check refused (a library, a
// built client), which no package list covers.
type Missing struct {
	Binaries map[string]string
	Check    error
}

// Ready tells whether nothing is missing.
func (m Missing) Ready() bool { return len(m.Binaries) == 0 && m.Check == nil }

// Packages are the Debian packages that provide the missing binaries,
// sorted, each once.
func (m Missing) Packages() []string {
	set := map[string]bool{}
	for _, p := range m.Binaries {
		if p != "" {
			set[p] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// DesignMissing looks for what d needs, as a run of its default workload
// (counter) would before it starts: its server binaries, the resource's
// Redis unless d keeps the data itself, and its own check. Only what
// locktest itself can name is looked up, so that installing one design's
// servers does not mean installing every design's.
func DesignMissing(d impls.Design) Missing {
	m := Missing{Binaries: map[string]string{}}
	bins := maps.Clone(d.Binaries)
	if bins == nil {
		bins = map[string]string{}
	}
	if !d.GuardsWrites {
		bins["redis-server"] = "redis-server"
	}
	for b, p := range bins {
		if _, err := cluster.LookBinary(b, p); err != nil {
			var mb *cluster.MissingBinaryError
			if !errors.As(err, &mb) {
				mb = &cluster.MissingBinaryError{Binary: b, Package: p}
			}
			m.Binaries[mb.Binary] = mb.Package
		}
	}
	if d.Check != nil {
		m.Check = d.Check()
	}
	return m
}
