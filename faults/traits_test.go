package faults

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locktest/locktest/history"
)

// TestEveryFaultDeclaresTraits: what locktest knows of a fault comes from
// its Traits alone, so every registered fault must declare them whole and
// consistent (Register panics on the contradictions checkTraits finds;
// this names every fault that would).
func TestEveryFaultDeclaresTraits(t *testing.T) {
	for _, f := range All() {
		if err := checkTraits(f); err != nil {
			t.Error(err)
		}
		tr := f.Traits()
		if tr.Targets != 0 {
			if _, err := ParseTarget(tr.Target); err != nil {
				t.Errorf("%s: default target: %v", f.Name(), err)
			}
		}
		if s := tr.Size; len(s.Sweeps) > 0 {
			if err := CheckMoment(s.Moment); err != nil {
				t.Errorf("%s: sweep moment: %v", f.Name(), err)
			}
			for _, v := range s.Sweeps {
				if !slices.Contains(Varies, v) {
					t.Errorf("%s sweeps %q, which is no magnitude", f.Name(), v)
				}
			}
		}
	}
}

// TestTraitsSayWhatFaultsDo holds the traits of the faults as written
// against what each one's Run does, as read from its file: a fault that
// acts on links and says it does not would run with no links and silently
// act on nothing; only the control run is inert. A fault added later is
// held to its own traits by TestEveryFaultDeclaresTraits.
func TestTraitsSayWhatFaultsDo(t *testing.T) {
	onLinks := []string{"latency", "reply-latency", "partition", "reset-peer", "slow-resource-write", "failover",
		"redlock-clock-jump", "redlock-restart", "partition-inbound", "partition-outbound", "loss"}
	offLinks := []string{"none", "pause-holder", "pause-client", "pause-acquire", "pause-waiter", "pause-at", "kill-holder",
		"kill-node", "pause-node", "client-clock-skew", "clock-bump", "clock-strobe"}
	aims := map[string]history.Aim{"pause-holder": history.AimHolder, "pause-client": history.AimHolder,
		"kill-holder": history.AimHolder, "client-clock-skew": history.AimHolder, "pause-waiter": history.AimWaiter,
		"pause-acquire": history.AimWaiter, "pause-at": history.AimWaiter, "slow-resource-write": history.AimWrite, "pause-node": history.AimServers,
		"kill-node": history.AimServers, "clock-bump": history.AimClocks, "clock-strobe": history.AimClocks,
		"redlock-clock-jump": history.AimClocks, "partition": history.AimLinks, "latency": history.AimLinks, "none": history.AimLock,
		"partition-inbound": history.AimLinks, "partition-outbound": history.AimLinks, "loss": history.AimLinks}
	lookup := func(name string) Traits {
		f, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return f.Traits()
	}
	// Delays need a proxy (no netem); one-way drops and loss need the
	// kernel's firewall; the rest of the link faults take either.
	nets := map[string]NetNeed{"latency": NetProxy, "reply-latency": NetProxy, "slow-resource-write": NetProxy,
		"partition-inbound": NetKernel, "partition-outbound": NetKernel, "loss": NetKernel, "partition": NetAny,
		"reset-peer": NetAny, "failover": NetAny}
	for name, need := range nets {
		if got := lookup(name).Net; got != need {
			t.Errorf("%s needs %v of its links, want %v", name, got, need)
		}
	}
	for _, name := range onLinks {
		if !lookup(name).Links {
			t.Errorf("%s acts on links and says it does not", name)
		}
	}
	for _, name := range offLinks {
		if lookup(name).Links {
			t.Errorf("%s never acts on links and says it does", name)
		}
	}
	for name, aim := range aims {
		if got := lookup(name).Aim; got != aim {
			t.Errorf("%s aims at %q, want %q", name, got, aim)
		}
	}
	for _, f := range All() {
		if tr := f.Traits(); tr.Inert != (f.Name() == None) || Injects([]Fault{f}) == tr.Inert {
			t.Errorf("%s: Inert %v; only none is", f.Name(), tr.Inert)
		}
	}
	none, _ := Lookup(None)
	latency, _ := Lookup("latency")
	if NeedClientLinks([]Fault{none}) || !NeedClientLinks([]Fault{none, latency}) {
		t.Error("a run needs links exactly when one of its faults acts on them")
	}
}

// allowedNames are string literals outside faults/ that equal a fault's
// name but mean something else, each with where and why.
var allowedNames = map[string]string{
	"cli/flags.go:none":            "--exec-servers none, a program with no servers",
	"impls/exec.go:none":           "--exec-servers none",
	"runner/config.go:none":        "--exec-servers none",
	"cluster/links.go:latency":     "toxiproxy's toxic type",
	"cluster/links.go:loss":        "the tag of a kernel link's loss rules",
	"scenario/settings.go:loss":    "the --loss setting, the loss fault's probability",
	"reports/results.go:latency":   "the latency plot's id",
	"envelope/bisect.go:none":      "a sweep that found no boundary",
	"live/display.go:none":         "a display mode",
	"reports/envelope.go:none":     "a sweep that found no boundary",
	"scenario/settings.go:latency": "the --latency setting, which sizes the latency fault (its Traits.Size names it)",
	// Stored runs carry fault names, not traits, and are read by any
	// locktest: the control run's name is part of that format.
	"scenario/config.go:none": "the default fault list, the control run",
	"reports/compare.go:none": "compare puts stored control runs first",
	"reports/health.go:none":  "a stored control run has no fault to start",
}

// TestNoFaultNamesOutsideFaults: no package but this one decides anything
// by a fault's name. A string literal equal to a registered fault's name in
// any other package (tests, docs and examples aside) fails here, unless it
// is listed in allowedNames as meaning something else.
func TestNoFaultNamesOutsideFaults(t *testing.T) {
	names := Names()
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "faults", "tests", "examples", "docs", ".git", "store", "out":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !slices.Contains(names, s) {
				return true
			}
			if _, ok := allowedNames[filepath.ToSlash(rel)+":"+s]; !ok {
				t.Errorf("%s names fault %q: read its Traits instead", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
