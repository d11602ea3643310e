package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/cluster/remote"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// SSHOptions are the SSH settings of cfg, for the hosts of --nodes.
func SSHOptions(cfg scenario.Config) remote.Options {
	return remote.Options{Hosts: cfg.Nodes, User: cfg.SSHUser, KeyFile: cfg.SSHKey, KnownHosts: cfg.SSHKnownHosts, Dir: cfg.SSHDir}
}

// dialNodes connects to the hosts of --nodes before anything of the run
// exists: a bad key, an unknown host key or an unreachable host is the
// user's to fix, said in one line, and leaves no run directory behind.
func dialNodes(ctx context.Context, cfg Resolved) ([]*remote.Host, error) {
	if len(cfg.Nodes) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hosts, err := remote.Dial(ctx, SSHOptions(cfg.Config))
	if err != nil {
		return nil, &BadConfigError{err}
	}
	// The servers' programs, as the control host finds them (CheckBinaries
	// found them all): locktest installs nothing on a host.
	var paths []string
	for b, p := range binaries(cfg) {
		if p == "" || b == "cc" { // the user's program and the compiler run here
			continue
		}
		if path, err := cluster.LookBinary(b, p); err == nil {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	if err := remote.CheckPrograms(ctx, hosts, paths); err != nil {
		for _, h := range hosts {
			h.Close()
		}
		var missing *remote.MissingBinaryError
		if errors.As(err, &missing) {
			return nil, &BadConfigError{err}
		}
		return nil, err
	}
	return hosts, nil
}

// writeOffsets keeps the hosts' clock offsets in the run directory, where
// analyze finds them.
func writeOffsets(dir string, offs []remote.Offset) error {
	out := make([]reports.ClockOffset, len(offs))
	for i, o := range offs {
		out[i] = reports.ClockOffset{Host: o.Host, When: o.When, OffsetNs: int64(o.Offset), UncertaintyNs: int64(o.Uncertainty), Error: o.Err}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("clock offsets: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, reports.ClockOffsetsFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("clock offsets: %w", err)
	}
	return nil
}

// readOffsets returns the clock offsets a run with --nodes measured, and
// a note for each: nil for any other run.
func readOffsets(dir string) ([]reports.ClockOffset, []string, error) {
	data, err := os.ReadFile(filepath.Join(dir, reports.ClockOffsetsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("clock offsets: %w", err)
	}
	var offs []reports.ClockOffset
	if err := json.Unmarshal(data, &offs); err != nil {
		return nil, nil, fmt.Errorf("clock offsets %s: %w", filepath.Join(dir, reports.ClockOffsetsFile), err)
	}
	var notes []string
	for _, o := range offs {
		notes = append(notes, remote.Offset{Host: o.Host, When: o.When, Offset: time.Duration(o.OffsetNs),
			Uncertainty: time.Duration(o.UncertaintyNs), Err: o.Error}.String())
	}
	return offs, notes, nil
}
