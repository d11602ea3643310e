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
	// Modified: the checkout had uncommitted changes.
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// CurrentBuild is the build of the running binary.
func CurrentBuild() Build {
	b := Build{Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok { // a binary built without module support
		return b
	}
	b.Module, b.Version = info.Main.Path, info.Main.Version
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
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
