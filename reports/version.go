package reports

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Build identifies the locktest binary, so that a result can be traced to
// the code that checked it: a verdict can change when the checker does.
type Build struct {
	Module string `json:"module"`
	// Version is the module's version; "(devel)" when built from a
	// checkout, which Revision then pins down.
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	// Time is the revision's commit time (RFC 3339), which dates a build
	// whose revision is not in the reader's clone.
	Time string `json:"time,omitempty"`
	// Modified: the checkout had uncommitted changes.
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// CurrentBuild is the build of the running binary.
func CurrentBuild() Build {
	info, ok := debug.ReadBuildInfo()
	if !ok { // a binary built without module support
		return Build{Go: runtime.Version()}
	}
	return buildOf(info)
}

// buildOf reads the module and the VCS stamp the go command wrote into a
// binary built inside a git checkout (without -buildvcs=false).
func buildOf(info *debug.BuildInfo) Build {
	b := Build{Module: info.Main.Path, Version: info.Main.Version, Go: info.GoVersion}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the build on one line: "github.com/locktest/locktest (devel)
// 9b765c7a1f2e+modified go1.26.8".
func (b Build) String() string {
	s := fmt.Sprintf("%s %s", b.Module, b.Version)
	if b.Revision != "" {
		s += " " + b.Revision[:min(12, len(b.Revision))]
		if b.Modified {
			s += "+modified"
		}
	}
	return s + " " + b.Go
}
