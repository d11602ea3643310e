package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/cluster/container"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

// Exit codes, as Jepsen's.
const (
	exitValid    = 0
	exitInvalid  = 1
	exitUnknown  = 2
	exitBadArgs  = 254
	exitInternal = 255
	// exitInterrupted follows the shell's 128+SIGINT.
	exitInterrupted = 130
)

const rootLong = `locktest: Jepsen-style tests of distributed locks on real processes.

It runs a lock design's servers and client processes under real faults
(pauses, kills, partitions, delays, clock jumps), records every operation
and checks the history with porcupine. Exit codes follow Jepsen: 0 valid,
1 invalid, 2 unknown, 254 bad arguments (one line says what is wrong),
255 internal error, 130 interrupted.`

// Main runs the locktest command line with args (without the program name)
// and returns the exit code. It is the whole of cmd/locktest, and a user's
// own main calls it after registering their design with impls.Register:
// the workers are spawned from os.Executable(), so the user's binary, with
// the design compiled in, is the worker too.
func Main(args []string, stdout, stderr io.Writer) int {
	mainArgs = args
	SetLogging(stderr)
	root := newRoot(prog, stdout, stderr)
	if len(args) == 0 {
		root.SetOut(stderr)
		root.Usage()
		return exitBadArgs
	}
	if cluster.InLab() {
		if err := cluster.StartLab(); err != nil {
			fmt.Fprintln(stderr, "locktest:", err)
			return exitInternal
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Whatever happens below, no child outlives this process, nor any
	// process a child started: orphans below it are reparented to it.
	if err := cluster.BecomeSubreaper(); err != nil {
		slog.Warn("processes that detach from the run may outlive it", "err", err)
	}
	defer cluster.KillAll()
	// Inside a docker-compose topology, the commands that run scenarios
	// end it as they end, bad arguments included (StopTopology).
	if slices.Contains([]string{"run", "suite", "explore", "envelope"}, args[0]) {
		defer container.StopTopology()
		// A cgroup holds what the subreaper loses when this process is
		// SIGKILLed: children that left their session. A coordinator
		// rerun in its lab was born into its parent's, whose guard kills
		// it and all it started, whichever of the two is killed.
		if !cluster.InLab() {
			if err := cluster.ConfineRun(); err != nil {
				slog.Info("processes that leave their session may outlive a SIGKILLed coordinator", "err", err)
			}
		}
	}
	root.SetArgs(twoDashes(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	var status exitStatus
	switch {
	case err == nil:
		return exitValid
	case errors.As(err, &status):
		return int(status)
	}
	// Anything else is cobra's or a validator's: the command line is
	// wrong, and nothing has started.
	fmt.Fprintf(stderr, "%s: %v; see %s --help\n", cmd.CommandPath(), err, cmd.CommandPath())
	return exitBadArgs
}

// mainArgs are the arguments Main was given: a run that needs a network
// namespace of its own runs them again in one (rerunInLab).
var mainArgs []string

// twoDashes rewrites the single-dash long flags Go's flag package took
// (-impl x, -seed=3), which scripts written for the command line before
// cobra may hold, into the --impl that pflag takes (it would read -impl as
// the short flags i, m, p, l). Only words that name a flag of the command
// they are given to are rewritten, so that a value such as -5s stays.
func twoDashes(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.DisableFlagParsing {
		return args
	}
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if len(name) > 1 && a[0] == '-' && a[1] != '-' && (name == "help" || cmd.Flags().Lookup(name) != nil) {
			out[i] = "-" + a
		}
	}
	return out
}

// prog is the name the running binary goes by (scenario.Program): help,
// errors and the commands they suggest use it, so that a user's own main
// built on this package, or locktest under another name, names itself.
var prog = scenario.Program()

// newRoot builds the command tree of a binary called name, writing to
// stdout and stderr. It is built anew for each Main, since its flags are
// bound to the variables of one invocation.
func newRoot(name string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:  name,
		Long: rootLong,
		// Runnable, so that a wrong command word is refused with 254
		// rather than answered with the help and 0.
		Args: cobra.ArbitraryArgs,
		RunE: runRoot,
		// The one line Main prints replaces cobra's usage dump.
		SilenceErrors:      true,
		SilenceUsage:       true,
		DisableSuggestions: true,
	}
	// --version as well as the version command: the flag is what people
	// try first.
	root.Flags().Bool("version", false, "print the build (git revision and time) and the installed servers' versions, as the version command")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommand(helpCommand())
	root.AddCommand(runCommand(), exploreCommand(), envelopeCommand(), analyzeCommand(),
		compareCommand(), serveCommand(), suiteCommand(), listCommand(), depsCommand(), imagesCommand(), healCommand(), versionCommand())
	root.AddCommand(internalCommands()...)
	// Cobra would add these as it executes; added here, the help and the
	// generated docs list them too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "shell completion: the script for bash, zsh, fish or powershell"
			// Like suite: a wrong shell is refused, not answered with help.
			c.Args, c.RunE = cobra.ArbitraryArgs, unknownCommand
		}
	}
	if name != "locktest" {
		renameCommands(root, name)
	}
	return root
}

// commandWord is "locktest" where the help names a command to type.
var commandWord = regexp.MustCompile(`\blocktest( (?:run|explore|envelope|analyze|compare|serve|suite|list|deps|images|version|help|completion)\b)`)

// renameCommands rewrites the commands the help texts suggest
// ("locktest list impls") for a binary called name, which is the one that
// has the user's designs.
func renameCommands(cmd *cobra.Command, name string) {
	repl := name + "$1"
	cmd.Short = commandWord.ReplaceAllString(cmd.Short, repl)
	cmd.Long = commandWord.ReplaceAllString(cmd.Long, repl)
	cmd.Example = commandWord.ReplaceAllString(cmd.Example, repl)
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) { f.Usage = commandWord.ReplaceAllString(f.Usage, repl) })
	}
	for _, c := range cmd.Commands() {
		renameCommands(c, name)
	}
}

// usageTemplate is cobra's usage in this project's style (lower-case
// headings), and for a group of commands such as suite, each command's
// own flags, so that one help shows the whole group.
const usageTemplate = `usage:{{if .HasAvailableSubCommands}}
  {{.CommandPath}} COMMAND [flags]{{else}}
  {{.UseLine}}{{end}}{{if .HasExample}}

examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasParent}}{{range .Commands}}{{if (and .IsAvailableCommand .HasAvailableLocalFlags)}}

flags of {{.CommandPath}}:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{end}}{{end}}{{if .HasAvailableSubCommands}}

"{{.CommandPath}} COMMAND --help" shows a command's own help.{{end}}
`

// exitStatus carries a command's exit code out of cobra, which knows
// only errors. A command prints its own message before returning one.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// exits adapts a command body that returns its exit code to cobra's RunE.
func exits(body func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if code := body(cmd, args); code != exitValid {
			return exitStatus(code)
		}
		return nil
	}
}

// runRoot is the command line with no command word: --version, or a
// mistake.
func runRoot(cmd *cobra.Command, args []string) error {
	if v, _ := cmd.Flags().GetBool("version"); v {
		if len(args) > 0 {
			return fmt.Errorf("--version takes no arguments (got %q)", args[0])
		}
		printVersion(cmd.OutOrStdout())
		return nil
	}
	return unknownCommand(cmd, args)
}

// unknownCommand is the body of a command that only groups others (the
// root, suite, images): reached with a word that names none of them, or
// with none.
func unknownCommand(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(args) == 0 {
		return fmt.Errorf("give a command (%s)", strings.Join(names, ", "))
	}
	return fmt.Errorf("unknown command %q (valid: %s)", args[0], strings.Join(names, ", "))
}

// helpCommand is `locktest help [COMMAND...]`: the command's own help, as
// its --help gives it. Cobra's own answers an unknown topic with the
// top-level usage and exit 0.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND...]",
		Short: "this help, or a command's own (locktest help suite run)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				// The help to see is target's, not help's own.
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v; see %s --help\n", cmd.CommandPath(), unknownCommand(target, rest), target.CommandPath())
				return exitStatus(exitBadArgs)
			}
			target.InitDefaultHelpFlag() // listed, as in the command's --help
			return target.Help()
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			parent, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, c := range parent.Commands() {
				if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// internalCommands are how locktest runs its own binary as something
// else: a run's worker, the watchdog of a docker run's containers, a
// container's node. They are hidden from help and completion, and parse
// no flags: their arguments are the coordinator's, not a user's.
func internalCommands() []*cobra.Command {
	internal := func(name string, body func(args []string, stderr io.Writer) int) *cobra.Command {
		return &cobra.Command{
			Use:                name,
			Hidden:             true,
			DisableFlagParsing: true,
			Args:               cobra.ArbitraryArgs,
			RunE:               exits(func(cmd *cobra.Command, args []string) int { return body(args, cmd.ErrOrStderr()) }),
		}
	}
	return []*cobra.Command{
		internal(runner.WorkerCommand, func(_ []string, stderr io.Writer) int {
			if err := runner.Worker(os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(stderr, prog+" worker:", err)
				return exitInternal
			}
			return exitValid
		}),
		internal(container.WatchdogCommand, cmdWatchdog),
		internal(container.NodeExecCommand, func(args []string, stderr io.Writer) int {
			if len(args) < 1 {
				fmt.Fprintln(stderr, prog, container.NodeExecCommand+": give the node spec file, then the default server's command if any")
				return exitBadArgs
			}
			if err := container.NodeExec(args[0], args[1:]); err != nil {
				fmt.Fprintln(stderr, prog, container.NodeExecCommand+":", err)
				return exitInternal
			}
			return exitValid
		}),
	}
}

// exitCode maps an error from the runner to an exit code, printing it on
// one line.
func exitCode(err error, stderr io.Writer) int {
	var bad *runner.BadConfigError
	switch {
	case errors.As(err, &bad):
		fmt.Fprintln(stderr, prog+":", err)
		return exitBadArgs
	case errors.Is(err, runner.ErrInterrupted):
		fmt.Fprintln(stderr, prog+": interrupted; every process was stopped")
		return exitInterrupted
	default:
		fmt.Fprintln(stderr, prog+": internal error:", err)
		return exitInternal
	}
}

// SetLogging sends log/slog's records to w: warnings and errors, or
// everything with LOCKTEST_DEBUG set. Main calls it; so does a test binary
// under locktesting, whose coordinator runs without Main.
func SetLogging(w io.Writer) {
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: logLevel()})))
}

func logLevel() slog.Level {
	if os.Getenv("LOCKTEST_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
