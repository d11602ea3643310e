package reports

import (
	"runtime/debug"
	"testing"
)

// TestBuildOf: the VCS stamp of a build inside a git checkout names the
// revision, its commit time and uncommitted changes; a build without one
// leaves them empty rather than guessing.
func TestBuildOf(t *testing.T) {
	main := debug.Module{Path: "github.com/locktest/locktest", Version: "(devel)"}
	cases := []struct {
		name     string
		settings []debug.BuildSetting
		want     Build
	}{
		{"clean checkout", []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "01019b6a5f3c2e1d"},
			{Key: "vcs.time", Value: "2026-11-28T05:23:04Z"},
			{Key: "vcs.modified", Value: "false"},
		}, Build{Module: main.Path, Version: "(devel)", Revision: "01019b6a5f3c2e1d", Time: "2026-11-28T05:23:04Z", Go: "go1.26.8"}},
		{"uncommitted changes", []debug.BuildSetting{
			{Key: "vcs.revision", Value: "01019b6a5f3c2e1d"},
			{Key: "vcs.time", Value: "2026-11-28T05:23:04Z"},
			{Key: "vcs.modified", Value: "true"},
		}, Build{Module: main.Path, Version: "(devel)", Revision: "01019b6a5f3c2e1d", Time: "2026-11-28T05:23:04Z", Modified: true, Go: "go1.26.8"}},
		{"no VCS stamp", []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}},
			Build{Module: main.Path, Version: "(devel)", Go: "go1.26.8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := buildOf(&debug.BuildInfo{GoVersion: "go1.26.8", Main: main, Settings: tc.settings})
			if got != tc.want {
				t.Errorf("buildOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
