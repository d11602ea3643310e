package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/locktest/locktest/scenario"
)

// TestResolveCheckpoints: an exec design lists the checkpoints its program
// announces (--exec-checkpoints), never its servers' Go client's; names are
// checked, and --checkpoint must be one the design reaches, before anything
// starts.
func TestResolveCheckpoints(t *testing.T) {
	exec := func(faults ...string) scenario.Config {
		c := scenario.Defaults()
		c.Impl, c.Faults, c.ExecCmd, c.ExecServers = "exec", faults, "python3 zoo.py token-after", "redis-single"
		return c
	}
	cases := []struct {
		name string
		edit func(*scenario.Config)
		want []string // the design's checkpoints, when it resolves
		bad  string   // the refusal, when not
	}{
		{"exec lists its own", func(c *scenario.Config) {
			*c = exec("pause-at")
			c.ExecCheckpoints = []string{"after-set", "before-del"}
		}, []string{"after-set", "before-del"}, ""},
		{"pause-at at the second", func(c *scenario.Config) {
			*c = exec("pause-at")
			c.ExecCheckpoints, c.Checkpoint = []string{"after-set", "before-del"}, "before-del"
		}, []string{"after-set", "before-del"}, ""},
		{"not the servers' Go client's", func(c *scenario.Config) {
			*c = exec("none")
			c.ExecServers = "redlock"
		}, nil, ""},
		{"pause-at without checkpoints", func(c *scenario.Config) { *c = exec("pause-at") }, nil,
			"fault pause-at does not apply to impl exec: pause-at needs a design that reports checkpoints"},
		{"pause-acquire on exec over redlock", func(c *scenario.Config) {
			*c = exec("pause-acquire")
			c.ExecServers = "redlock"
		}, nil, "needs a design that reports the acquire-granted checkpoint"},
		{"unknown checkpoint", func(c *scenario.Config) {
			*c = exec("pause-at")
			c.ExecCheckpoints, c.Checkpoint = []string{"after-set"}, "before-set"
		}, nil, `--checkpoint "before-set": impl exec reaches no such checkpoint; it reaches: after-set`},
		{"go design's checkpoint", func(c *scenario.Config) {
			*c = scenario.Defaults()
			c.Impl, c.Faults, c.Checkpoint = "redlock", []string{"pause-at"}, "acquire-granted"
		}, []string{"acquire-granted"}, ""},
		{"none to choose from", func(c *scenario.Config) {
			*c = scenario.Defaults()
			c.Impl, c.Faults, c.Checkpoint = "redis-single", []string{"pause-at"}, "x"
		}, nil, "it reaches: none (an exec program announces its own: --exec-checkpoints)"},
		{"no fault strikes there", func(c *scenario.Config) {
			*c = exec("pause-holder")
			c.ExecCheckpoints, c.Checkpoint = []string{"after-set"}, "after-set"
		}, nil, `--checkpoint "after-set": no fault of the run stops a client at a checkpoint it names: add pause-at to --fault, or drop --checkpoint`},
		{"bad name", func(c *scenario.Config) {
			*c = exec("none")
			c.ExecCheckpoints = []string{"after set\t"}
		}, nil, "--exec-checkpoints: checkpoint name"},
		{"twice", func(c *scenario.Config) {
			*c = exec("none")
			c.ExecCheckpoints = []string{"a", "b", "a"}
		}, nil, `--exec-checkpoints: "a" is listed twice`},
		{"not exec", func(c *scenario.Config) {
			*c = scenario.Defaults()
			c.Impl, c.Faults, c.ExecCheckpoints = "redis-single", []string{"none"}, []string{"a"}
		}, nil, "--exec-checkpoints only apply to --impl exec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg scenario.Config
			tc.edit(&cfg)
			r, err := Resolve(cfg)
			if tc.bad != "" {
				var b *BadConfigError
				if !errors.As(err, &b) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("error %v, want a bad config saying %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Design.Checkpoints, tc.want) {
				t.Errorf("design's checkpoints %q, want %q", r.Design.Checkpoints, tc.want)
			}
			wantAt := cfg.Checkpoint
			if wantAt == "" && len(tc.want) > 0 {
				wantAt = tc.want[0]
			}
			if got := runCheckpoint(r); got != wantAt {
				t.Errorf("faults strike at %q, want %q", got, wantAt)
			}
			if cmd := r.Command(); len(cfg.ExecCheckpoints) > 0 && !strings.Contains(cmd, "--exec-checkpoints "+strings.Join(cfg.ExecCheckpoints, ",")) {
				t.Errorf("command %s does not give --exec-checkpoints", cmd)
			}
		})
	}
}
