package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// settingFlag is a run setting as a command-line flag: scenario.Value, with
// the name its value goes by in the help (--impl NAME, --ttl DURATION).
type settingFlag struct {
	scenario.Value
	placeholder string
}

// Type is what pflag prints after the flag's name; "bool" makes it a
// flag that needs no value.
func (f settingFlag) Type() string {
	if f.IsBoolFlag() {
		return "bool"
	}
	return f.placeholder
}

// bindSetting binds the setting s to its field in cfg as a flag of fs,
// with help as its help.
func bindSetting(fs *pflag.FlagSet, s scenario.Setting, cfg *scenario.Config, help string) {
	f := fs.VarPF(settingFlag{s.Value(cfg), s.Placeholder()}, s.Flag, "", help)
	if f.Value.Type() == "bool" {
		f.NoOptDefVal = "true"
	}
	// The help gives a default only where it is not the zero value: a
	// zero there means none, or "derived", which the help text says.
	if f.DefValue == s.Value(&scenario.Config{}).String() {
		f.DefValue = ""
	}
}

// bindSettings binds the named settings of run's table to base, as the
// flags of a command that frames many runs (explore, envelope): the same
// names, meaning and completion as in run, help replaced where given.
func bindSettings(cmd *cobra.Command, base *scenario.Config, help map[string]string, names ...string) {
	for _, name := range names {
		s, ok := scenario.SettingByFlag(name)
		if !ok {
			panic("cli: no setting " + name)
		}
		h := s.Help
		if alt, ok := help[name]; ok {
			h = alt
		}
		bindSetting(cmd.Flags(), s, base, h)
		completeSetting(cmd, name)
	}
}

// completeSetting registers the completion of setting flag name's values
// on cmd, where they are a known set.
func completeSetting(cmd *cobra.Command, name string) {
	if f, ok := settingCompletions[name]; ok {
		if err := cmd.RegisterFlagCompletionFunc(name, f); err != nil {
			panic(fmt.Sprintf("cli: completion of --%s: %v", name, err))
		}
	}
}

// settingCompletions complete the settings whose values are registered
// names or a fixed set. The registries are read when a completion is
// asked for, so that a user's binary offers its own designs too.
var settingCompletions = map[string]cobra.CompletionFunc{
	"impl":              completeNames(designs),
	"exec-servers":      completeNames(func() []cobra.Completion { return append(designs(), "none") }),
	"workload":          completeNames(workloadNames),
	"fencing":           completeNames(func() []cobra.Completion { return workloads.FencingModes }),
	"fault":             completeList(faultNames),
	"fault-moment":      completeNames(func() []cobra.Completion { return faults.Moments }),
	"backend":           completeNames(cluster.BackendNames),
	"stop-on-violation": completeList(func() []cobra.Completion { return []string{checker.MutexCheck, checker.ResourceCheck} }),
}

func designs() []cobra.Completion {
	var out []cobra.Completion
	for _, d := range impls.All() {
		out = append(out, cobra.CompletionWithDesc(d.Name, d.Description))
	}
	return out
}

func workloadNames() []cobra.Completion {
	var out []cobra.Completion
	for _, w := range workloads.All() {
		out = append(out, cobra.CompletionWithDesc(w.Name, w.Description))
	}
	return out
}

func faultNames() []cobra.Completion {
	var out []cobra.Completion
	for _, f := range faults.All() {
		out = append(out, cobra.CompletionWithDesc(f.Name(), f.Description()))
	}
	return out
}

// completeNames completes one of the names that names gives.
func completeNames(names func() []cobra.Completion) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, c := range names() {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeList completes the last name of a comma-separated list
// (--fault pause-holder,lat), offering the names not in it yet. No space
// follows, so that another comma can.
func completeList(names func() []cobra.Completion) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		i := strings.LastIndex(toComplete, ",")
		given, last := toComplete[:i+1], toComplete[i+1:]
		var out []cobra.Completion
		for _, c := range names() {
			name, _, _ := strings.Cut(c, "\t")
			switch {
			case !strings.HasPrefix(name, last) || slices.Contains(strings.Split(given, ","), name):
			case given != "":
				// Without its description: bash's completion script
				// matches a described one escaped (a\,b), which never
				// equals the a,b typed.
				out = append(out, given+name)
			default:
				out = append(out, c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// completeProgress completes --progress.
var completeProgress = completeNames(func() []cobra.Completion {
	var out []cobra.Completion
	for _, m := range live.Modes {
		out = append(out, string(m))
	}
	return out
})

// completeDirs completes directory arguments (run directories, stores,
// suite outputs).
func completeDirs(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// completeSuiteFile completes a command's one suite file.
func completeSuiteFile(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// flagError rewrites pflag's errors into the words of this command line's
// one-line messages. A single-dash long flag (-impl), which Go's flag
// package took, gets a hint: pflag reads it as the short flags i, m, p, l.
func flagError(cmd *cobra.Command, err error) error {
	var (
		unknown *pflag.NotExistError
		invalid *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() != "":
		word := unknown.GetSpecifiedShortnames()
		name, _, _ := strings.Cut(word, "=")
		if cmd.Flags().Lookup(name) != nil {
			return fmt.Errorf("unknown flag -%s: long flags take two dashes, --%s", word, name)
		}
		return fmt.Errorf("unknown flag -%s", word)
	case errors.As(err, &unknown):
		return fmt.Errorf("unknown flag --%s", unknown.GetSpecifiedName())
	case errors.As(err, &invalid):
		return fmt.Errorf("invalid value %q for --%s: %w", invalid.GetValue(), invalid.GetFlag().Name, invalid.Unwrap())
	}
	return err
}
