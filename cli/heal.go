package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/locktest/locktest/cluster/remote"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
)

const healLong = `Undoes what a run with --nodes left on its hosts: a coordinator killed
with SIGKILL (or a lost control host) cannot stop the servers it started
there, and nothing on another machine dies with it. Every act on a host is
written to the run directory's undo list (` + remote.UndoFile + `) before the
run goes on; heal reads the list, kills each server still running (the
same process: its pid and start time must match) and removes the run's
directory on each host, and records what it undid. A run that ended any
other way undid everything itself: heal then says there is nothing to undo.

The hosts and SSH settings are the run's (its config.json) unless flags
give them: --nodes must name every host the run acted on.`

func healCommand() *cobra.Command {
	var dir string
	var opt remote.Options
	var nodes string
	cmd := &cobra.Command{
		Use:     "heal [--dir RUN] [--nodes HOST,...]",
		Short:   "undo what a killed run with --nodes left on its hosts",
		Long:    healLong,
		Example: "  locktest heal\n  locktest heal --dir store/redis-replicated_counter_failover/latest --nodes 10.0.0.1,10.0.0.2,10.0.0.3 --ssh-key ~/.ssh/id_ed25519",
		Args:    cobra.NoArgs,
		RunE: exits(func(cmd *cobra.Command, _ []string) int {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if nodes != "" {
				hosts, err := remote.ExpandHosts(strings.Split(nodes, ","))
				if err != nil {
					fmt.Fprintf(stderr, "%s heal: %v\n", prog, err)
					return exitBadArgs
				}
				opt.Hosts = hosts
			}
			if err := healOptions(dir, &opt); err != nil {
				fmt.Fprintf(stderr, "%s heal: %v\n", prog, err)
				return exitBadArgs
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			if err := remote.Heal(ctx, dir, opt, stdout); err != nil {
				fmt.Fprintf(stderr, "%s heal: %v\n", prog, err)
				return exitInternal
			}
			return exitValid
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "dir", filepath.Join("store", "latest"), "the run directory whose undo list to undo")
	fs.StringVar(&nodes, "nodes", "", "the run's hosts ([user@]host[:port],... or @FILE, one a line; default: the run's --nodes)")
	fs.StringVar(&opt.User, "ssh-user", "", "the login on hosts that name none (default: the run's, or $USER)")
	fs.StringVar(&opt.KeyFile, "ssh-key", "", "the private key to log in with (default: the run's, or the agent at SSH_AUTH_SOCK)")
	fs.StringVar(&opt.KnownHosts, "ssh-known-hosts", "", "the known_hosts file host keys are checked against (default: the run's, or ~/.ssh/known_hosts)")
	return cmd
}

// healOptions fills what the flags left out from the run's config.json,
// and refuses a directory that is no run with --nodes.
func healOptions(dir string, opt *remote.Options) error {
	if _, err := os.Stat(filepath.Join(dir, remote.UndoFile)); err != nil {
		return fmt.Errorf("--dir %s: no undo list (%s) there: not the directory of a run with --nodes", dir, remote.UndoFile)
	}
	var cfg scenario.Config
	if data, err := os.ReadFile(filepath.Join(dir, scenario.ConfigFile)); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("--dir %s: %s: %w", dir, scenario.ConfigFile, err)
		}
	}
	run := runner.SSHOptions(cfg)
	if len(opt.Hosts) == 0 {
		opt.Hosts = run.Hosts
	}
	if opt.User == "" {
		opt.User = run.User
	}
	if opt.KeyFile == "" {
		opt.KeyFile = run.KeyFile
	}
	if opt.KnownHosts == "" {
		opt.KnownHosts = run.KnownHosts
	}
	if len(opt.Hosts) == 0 {
		return fmt.Errorf("--nodes: give the run's hosts (its config.json names none)")
	}
	return remote.ParseHosts(opt.Hosts)
}
