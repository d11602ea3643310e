package suite

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// Cell is one design × fault of a suite's matrix.
type Cell struct {
	Design, Fault string
}

// Name is the name of the cell's scenario, <impl>-<fault>: a scenario of
// that name, impl and single fault overrides the cell.
func (c Cell) Name() string { return impls.FileName(c.Design) + "-" + c.Fault }

// All, in a matrix's designs or faults, means every registered one (for
// faults: every one that applies to the design).
const All = "all"

// matrixCell is a cell with the nodes that named its design and fault,
// for the lines of errors.
type matrixCell struct {
	Cell
	design, fault *yaml.Node
}

// matrixFields are the fields of a matrix block: designs and faults, and
// every scenario field a cell can take (impl, faults and anomaly come from
// the cell, or belong to a scenario that overrides it).
func matrixFields() []string {
	fields := []string{"designs", "faults"}
	for _, f := range validScenarioFields(false) {
		if f != "impl" && f != "faults" && f != "anomaly" {
			fields = append(fields, f)
		}
	}
	return fields
}

// expandMatrix adds a matrix block's cells to f, whose scenarios are the
// file's explicit ones. A cell that an explicit scenario overrides (same
// name, impl and single fault) runs as that scenario; every other cell
// becomes a scenario of its own, with the defaults, the matrix's settings
// and its expectation, marked Unmeasured.
func (p parser) expandMatrix(f *File, kv pair, defaults []pair) error {
	cells, settings, err := p.matrix(kv, defaults)
	if err != nil {
		return err
	}
	explicit := map[string]int{}
	for i, sc := range f.Scenarios {
		explicit[sc.Name] = i
	}
	generated := map[string]Cell{}
	for _, c := range cells {
		name := c.Name()
		if other, dup := generated[name]; dup {
			return p.errAt(c.design, kv.path, "cells %s × %s and %s × %s would both be named %q: scenario names must be unique",
				other.Design, other.Fault, c.Design, c.Fault, name)
		}
		if i, ok := explicit[name]; ok {
			run := f.Scenarios[i].Runs[0]
			if run.Impl != c.Design || !slices.Equal(run.Config.Faults, []string{c.Fault}) {
				return &Error{File: p.path, Line: f.Scenarios[i].Line, Field: fmt.Sprintf("scenarios[%d].name", i),
					Msg: fmt.Sprintf("%q is the name of the matrix cell %s × %s: give impl %s and faults %s to override it, or another name",
						name, c.Design, c.Fault, c.Design, c.Fault)}
			}
			f.Matrix = append(f.Matrix, c.Cell)
			continue
		}
		sc, err := p.scenario(cellNode(c), kv.path, settings)
		if err != nil {
			return err
		}
		sc.Unmeasured = true
		generated[name] = c.Cell
		f.Matrix = append(f.Matrix, c.Cell)
		f.Scenarios = append(f.Scenarios, sc)
	}
	return nil
}

// cellNode is the scenario a cell stands for, as if written in the file
// where its design and fault are named.
func cellNode(c matrixCell) *yaml.Node {
	scalar := func(value string, at *yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: value, Line: at.Line, Column: at.Column}
	}
	return &yaml.Node{Kind: yaml.MappingNode, Line: c.design.Line, Column: c.design.Column, Content: []*yaml.Node{
		scalar("name", c.design), scalar(c.Name(), c.design),
		scalar("impl", c.design), scalar(c.Design, c.design),
		scalar("faults", c.fault), scalar(c.Fault, c.fault),
	}}
}

// matrix reads a matrix block: its cells, each design with every listed
// fault that applies to it, and the fields every cell runs with (the
// defaults, then the matrix's own).
func (p parser) matrix(kv pair, defaults []pair) ([]matrixCell, []pair, error) {
	own, err := p.pairs(kv.val, kv.path, matrixFields())
	if err != nil {
		return nil, nil, err
	}
	settings := slices.Clone(defaults)
	var designPair, faultPair *pair
	hasExpect := false
	for _, f := range own {
		switch f.key.Value {
		case "designs":
			designPair = &f
		case "faults":
			faultPair = &f
		default:
			hasExpect = hasExpect || f.key.Value == "expect"
			settings = append(settings, f)
		}
	}
	switch {
	case designPair == nil:
		return nil, nil, p.errAt(kv.key, kv.path+".designs", "missing: give all, or a list of designs")
	case faultPair == nil:
		return nil, nil, p.errAt(kv.key, kv.path+".faults", "missing: give all (every fault that applies to a design), or a list of faults")
	case !hasExpect:
		return nil, nil, p.errAt(kv.key, kv.path+".expect", "missing: give the expectation of the cells no scenario overrides, e.g. any")
	}
	// The workload decides which faults apply.
	cfg := scenario.Defaults()
	var sc Scenario
	var expect *Expect
	for _, s := range settings {
		if err := p.field(s, &sc, &cfg, &expect); err != nil {
			return nil, nil, err
		}
	}
	var allDesigns []string
	for _, d := range impls.All() {
		if d.Name != impls.ExecName { // the user's own client needs exec_cmd: name it to include it
			allDesigns = append(allDesigns, d.Name)
		}
	}
	designs, err := p.matrixNames(*designPair, allDesigns, func(name string) error {
		_, err := impls.Lookup(name)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	faultNames, err := p.matrixNames(*faultPair, faults.Names(), func(name string) error {
		_, err := faults.LookupItem(name) // a fault, or a pair (a+b)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var cells []matrixCell
	applies := map[string]bool{}
	for _, dn := range designs {
		design, _ := impls.Lookup(dn.Value)
		for _, fn := range faultNames {
			members, _ := faults.LookupItem(fn.Value)
			// A fault only the kernel makes has no cell in a matrix run
			// on the proxy, as one that does not apply.
			misfits := func(f faults.Fault) bool {
				return f.Applies(design, faultWorkload(cfg.Workload)) != nil ||
					(f.Traits().Net == faults.NetKernel && runner.Network(cfg) != runner.NetworkNetns)
			}
			if !slices.ContainsFunc(members, misfits) {
				applies[fn.Value] = true
				cells = append(cells, matrixCell{Cell: Cell{Design: dn.Value, Fault: fn.Value}, design: dn, fault: fn})
			}
		}
	}
	for _, fn := range faultNames {
		if !applies[fn.Value] && faultPair.val.Value != All {
			return nil, nil, p.errAt(fn, faultPair.path, "fault %s applies to none of the matrix's designs", fn.Value)
		}
	}
	return cells, settings, nil
}

// matrixNames reads a matrix's designs or faults: all, or a list of names
// that lookup knows. Each name comes back as the node that gave it.
func (p parser) matrixNames(kv pair, all []string, lookup func(string) error) ([]*yaml.Node, error) {
	if kv.val.Kind == yaml.ScalarNode && kv.val.Value == All {
		var out []*yaml.Node
		for _, name := range all {
			out = append(out, &yaml.Node{Kind: yaml.ScalarNode, Value: name, Line: kv.val.Line, Column: kv.val.Column})
		}
		return out, nil
	}
	names, err := p.strings(kv.val, kv.path)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, p.errAt(kv.val, kv.path, "want all, or a non-empty list of names")
	}
	var out []*yaml.Node
	for i, name := range names {
		at := kv.val
		if kv.val.Kind == yaml.SequenceNode {
			at = kv.val.Content[i]
		}
		if err := lookup(name); err != nil {
			return nil, p.errAt(at, kv.path, "%v", err)
		}
		if j := slices.IndexFunc(out, func(n *yaml.Node) bool { return n.Value == name }); j >= 0 {
			return nil, p.errAt(at, kv.path, "%s given twice: list each once", name)
		}
		out = append(out, &yaml.Node{Kind: yaml.ScalarNode, Value: name, Line: at.Line, Column: at.Column})
	}
	return out, nil
}

// faultWorkload is the named workload as a fault's Applies sees it; an
// unknown workload is refused elsewhere.
func faultWorkload(name string) faults.Workload {
	w, err := workloads.Lookup(name)
	return faults.Workload{Name: name, Resource: err == nil && w.NeedsResource}
}
