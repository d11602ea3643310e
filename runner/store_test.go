package runner

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/scenario"
)

// TestNoRunDirForUnstorableSettings: settings config.json cannot hold
// (an infinite clock rate, were it to get past Check) leave no run
// directory and no latest link: the config is encoded before the
// directory is made.
func TestNoRunDirForUnstorableSettings(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	cfg := scenario.Defaults()
	cfg.Impl, cfg.Scenario, cfg.Store, cfg.ClockRate = "none", "x", store, math.Inf(1)
	if _, err := Run(context.Background(), Resolved{Config: cfg}); err == nil {
		t.Fatal("a config that cannot be encoded ran")
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("the store was made: %v", err)
	}
}

// TestRelinkLeavesNoTemporary: a latest that cannot be replaced (a
// directory in its place) fails without leaving latest.tmpPID behind.
func TestRelinkLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "latest", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := relink(filepath.Join(dir, "latest"), "run"); err == nil {
		t.Fatal("relink replaced a directory")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d entries in the store, want latest alone", len(entries))
	}
}

// TestLoadRunChecksConfig: a config.json no run writes (blank, out of the
// bounds the command line has, or naming a design or fault no run could
// have had) is refused naming its field; a run of a user's own design
// and fault, which its config.json describes, is read.
func TestLoadRunChecksConfig(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{}`, "field impl"},
		{`{"impl":"redis-single"}`, `field scenario: scenario: name ""`},
		{`{"impl":"redis-single","scenario":"s","clients":-3}`, "field clients: clients -3: must be between 1 and 64"},
		{`{"impl":"redis-single","scenario":"s","faults":["none","none"]}`, "field faults: faults: none is given twice"},
		{`{"impl":"nosuch","scenario":"s"}`, `field impl: unknown impl "nosuch"`},
		{`{"impl":"nosuch","scenario":"s","design":{},"reproduce":"locktest run --impl redis-single --scenario s"}`, `field impl: "nosuch", but the reproduce command runs --impl redis-single`},
		{`{"impl":"<script>x</script>","scenario":"s","design":{}}`, `field impl: "<script>x</script>" is not a name a design can have`},
		{`{"impl":"exec","scenario":"s","design":{}}`, "field exec_cmd: an exec run drives a program"},
		{`{"impl":"redis-single","scenario":"s","faults":["bogus"]}`, `field faults: unknown fault "bogus"`},
		{`{"impl":"redis-single","scenario":"s","faults":["latency+latency"]}`, `field faults: faults: latency+latency pairs latency with itself`},
		{`{"impl":"redis-single","scenario":"s","faults":["kill-node+pause-node"]}`, `field faults: kill-node+pause-node: kill-node and pause-node both seize server processes`},
		{`{"impl":"redis-single-fenced","scenario":"s","fencing":"reads"}`, `field fencing: fencing: "reads" is not a fencing mode`},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), []byte(tc.config), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadRun(dir)
		var bad *BadConfigError
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal saying %q", tc.config, err, tc.want)
		}
	}
	for _, config := range []string{
		`{"impl":"redis-single","scenario":"s"}`,
		// A design and fault of a user's own binary, described by it.
		`{"impl":"my-lock","scenario":"s","faults":["my-fault"],"design":{},"reproduce":"mylock run --impl my-lock"}`,
		`{"impl":"lib:my-lock","scenario":"s","design":{}}`,
		`{"impl":"exec","scenario":"s","exec_cmd":"python3 client.py"}`,
		// A pair, each fault with its own length.
		`{"impl":"redis-single","scenario":"s","faults":["reply-latency+pause-holder"],"fault_duration2":"1.5s"}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, scenario.ConfigFile), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadRun(dir); err != nil {
			t.Errorf("%s: %v", config, err)
		}
	}
}
