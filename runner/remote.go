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
	err = remote.CheckPrograms(ctx, hosts, paths)
	if err == nil && cfg.Network == NetworkFirewall {
		err = remote.CheckFirewall(ctx, hosts)
	}
	if err == nil && len(cfg.Servers) > 0 {
		var servers []cluster.UserServer
		if servers, err = cluster.ParseUserServers(cfg.Servers, cfg.ServerPids); err == nil {
			err = remote.CheckServers(ctx, hosts, servers)
		}
	}
	if err != nil {
		for _, h := range hosts {
			h.Close()
		}
		var missing *remote.MissingBinaryError
		var firewall *remote.FirewallError
		var server *remote.ServerError
		if errors.As(err, &missing) || errors.As(err, &firewall) || errors.As(err, &server) {
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
		if !o.At.IsZero() {
			out[i].AtUnixNs = o.At.UnixNano()
		}
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

// readOffsets returns the clock offsets a run with --nodes measured, a
// note for each and for the drift they bound, and that drift (clockDrift):
// nil and 0 for any other run.
func readOffsets(dir string) ([]reports.ClockOffset, []string, float64, error) {
	data, err := os.ReadFile(filepath.Join(dir, reports.ClockOffsetsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("clock offsets: %w", err)
	}
	var offs []reports.ClockOffset
	if err := json.Unmarshal(data, &offs); err != nil {
		return nil, nil, 0, fmt.Errorf("clock offsets %s: %w", filepath.Join(dir, reports.ClockOffsetsFile), err)
	}
	var notes []string
	for _, o := range offs {
		notes = append(notes, remote.Offset{Host: o.Host, When: o.When, Offset: time.Duration(o.OffsetNs),
			Uncertainty: time.Duration(o.UncertaintyNs), Err: o.Error}.String())
	}
	drift, note := clockDrift(offs)
	if note != "" {
		notes = append(notes, note)
	}
	return offs, notes, drift, nil
}

// clockDrift bounds how much faster than the control host's clock any
// host's clock ran, as a fraction: from its offsets at the start and at
// the end, each within its uncertainty. The history is stamped on the
// control host and a lease runs out by the server's clock, so a constant
// offset changes nothing the checker judges, and a faster clock ends a
// lease early by this fraction of it; the lease is judged that much
// shorter (checker.Options.Drift), so that "inside the lease" is said
// only when it is sure on every clock. A host measured only once (a
// killed run) bounds nothing: the lease is judged on the control host's
// clock then, and the note says so.
func clockDrift(offs []reports.ClockOffset) (float64, string) {
	type pair struct{ start, end *reports.ClockOffset }
	byHost := map[string]*pair{}
	var hosts []string
	for i := range offs {
		o := &offs[i]
		p := byHost[o.Host]
		if p == nil {
			p = &pair{}
			byHost[o.Host] = p
			hosts = append(hosts, o.Host)
		}
		if o.Error == "" && o.AtUnixNs != 0 {
			if o.When == "start" {
				p.start = o
			} else {
				p.end = o
			}
		}
	}
	drift, fastest := 0.0, ""
	for _, h := range hosts {
		p := byHost[h]
		if p.start == nil || p.end == nil || p.end.AtUnixNs <= p.start.AtUnixNs {
			return 0, fmt.Sprintf("lease judged on this host's clock: host %s's clock was not measured at both ends of the run, which would bound how fast it ran", h)
		}
		moved := p.end.OffsetNs - p.start.OffsetNs
		bound := float64(max(moved, -moved)+p.start.UncertaintyNs+p.end.UncertaintyNs) / float64(p.end.AtUnixNs-p.start.AtUnixNs)
		if bound > drift {
			drift, fastest = bound, h
		}
	}
	if fastest == "" {
		return 0, ""
	}
	return drift, fmt.Sprintf("lease judged %.0f ppm shorter: the hosts' clocks may have run that much faster than this one (host %s: offsets at start and end, with their uncertainties)",
		drift*1e6, fastest)
}
