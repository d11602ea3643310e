package cli

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/scenario"
)

// changed returns cfg with the setting s moved off its value: every field
// type a setting can have, so a new setting is covered without a new case.
// Strings get a shell metacharacter, so Command's quoting is exercised.
func changed(t *testing.T, cfg scenario.Config, s scenario.Setting) scenario.Config {
	switch p := s.Ptr(&cfg).(type) {
	case *string:
		*p += "x y'z"
	case *int:
		*p += 7
	case *int64:
		*p += 7
	case *float64:
		*p += 0.25
	case *bool:
		*p = !*p
	case *scenario.Duration:
		*p -= scenario.Duration(1500 * time.Millisecond) // negative for some: still one word
	case *[]string:
		*p = append(*p, "pause-holder", "latency")
	default:
		t.Fatalf("--%s: no way to change a %T; add one here", s.Flag, p)
	}
	return cfg
}

// words splits a command line the way a POSIX shell does.
func words(t *testing.T, cmd string) []string {
	out, err := exec.Command("sh", "-c", `f() { printf '%s\0' "$@"; }; f `+cmd).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestCommandRoundTrip: Config.Command, run through a shell and the flags
// of `run`, gives back the same Config — for each setting changed alone
// and for all changed at once. Store is not part of a run's command
// (runs reproduce into the default store), so it must stay out of it.
func TestCommandRoundTrip(t *testing.T) {
	all := scenario.Defaults()
	cases := map[string]scenario.Config{"defaults": scenario.Defaults()}
	for _, s := range scenario.Settings {
		if s.Name() == "" {
			continue
		}
		cases[s.Flag] = changed(t, scenario.Defaults(), s)
		all = changed(t, all, s)
	}
	cases["all"] = all
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := want.Command()
			args := words(t, cmd)
			if len(args) < 2 || args[0] != "locktest" || args[1] != "run" {
				t.Fatalf("%s: does not start with locktest run", cmd)
			}
			got := scenario.Defaults()
			if err := runFlags(&got, new(live.Mode)).Parse(args[2:]); err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s\ngives %+v\nwant  %+v", cmd, got, want)
			}
		})
	}
	stored := scenario.Defaults()
	stored.Store = "elsewhere"
	if cmd := stored.Command(); strings.Contains(cmd, "--store") {
		t.Fatalf("%s: names the store", cmd)
	}
}
