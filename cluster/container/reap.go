package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locktest/locktest/cluster"
	"github.com/moby/moby/client"
	tc "github.com/testcontainers/testcontainers-go"
)

// Everything the docker backend creates carries two labels: the run it
// belongs to, and the coordinator that owns it ("host:pid:start", the
// process's start time telling a live owner from a reused pid).
//
// Three things remove it, so that no exit path leaves a container behind:
// the run's own teardown (every path the coordinator survives, Ctrl-C
// included); a watchdog process, which outlives a coordinator killed with
// SIGKILL and removes the run's containers the moment the coordinator's
// end of a pipe closes; and a sweep at the start of every docker run,
// which removes whatever belongs to a coordinator that no longer lives
// (one killed together with its watchdog, or a machine that lost power).
const (
	LabelRun   = "io.locktest.run"
	LabelOwner = "io.locktest.owner"
)

// ownerID names this coordinator: host, pid and the pid's start time.
func ownerID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), procStart(os.Getpid()))
}

// procStart is a process's start time in clock ticks since boot (field 22
// of /proc/pid/stat), or "" if it does not exist.
func procStart(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerAlive reports whether the owner label names a live process on this
// host. An owner on another host (a shared engine) counts as alive: only
// its own machine can tell.
func ownerAlive(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	if host, _ := os.Hostname(); parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	return err == nil && procStart(pid) == parts[2] && parts[2] != ""
}

// Sweep removes the containers, networks and volumes of run runID, or,
// with runID "", of every run whose coordinator is dead.
func Sweep(ctx context.Context, cli *tc.DockerClient, runID string) error {
	f := client.Filters{}
	if runID == "" {
		f = f.Add("label", LabelRun)
	} else {
		f = f.Add("label", LabelRun+"="+runID)
	}
	ours := func(labels map[string]string) bool { return runID != "" || !ownerAlive(labels[LabelOwner]) }
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if !ours(c.Labels) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil &&
			!strings.Contains(err.Error(), "No such container") && !strings.Contains(err.Error(), "already in progress") {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.ID[:12], err))
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, n := range ns.Items {
		if !ours(n.Labels) {
			continue
		}
		if err := removeNetwork(ctx, cli, n.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
		}
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list volumes: %w", err))...)
	}
	for _, v := range vs.Items {
		if !ours(v.Labels) {
			continue
		}
		if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// removeNetwork removes a network, waiting out the engine's race in which
// the endpoints of containers it has just removed are still counted ("has
// active endpoints") for a moment after the removal returned.
func removeNetwork(ctx context.Context, cli *tc.DockerClient, id string) error {
	for wait := 100 * time.Millisecond; ; wait *= 2 {
		_, err := cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil || strings.Contains(err.Error(), "not found") {
			return nil
		}
		if !strings.Contains(err.Error(), "active endpoints") || wait > 5*time.Second {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// WatchdogCommand is the hidden subcommand the watchdog runs as.
const WatchdogCommand = "docker-watchdog"

// watchdog is the coordinator's end of the pipe to its watchdog process.
type watchdog struct {
	w    *os.File
	proc *os.Process
	once sync.Once
}

// startWatchdog starts `<this program> docker-watchdog RUN` in a session
// of its own (Ctrl-C and a kill of the coordinator's process group do not
// reach it), holding the read end of a pipe whose write end only this
// process has: however this process ends, the kernel closes it.
func startWatchdog(runID string) (*watchdog, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("docker watchdog: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("docker watchdog: %w", err)
	}
	cmd := exec.Command(exe, WatchdogCommand, runID)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("docker watchdog: %w", err)
	}
	r.Close()
	cluster.Outlive(cmd.Process.Pid)
	go func() { _ = cmd.Wait() }() // reap it when it exits
	return &watchdog{w: w, proc: cmd.Process}, nil
}

// release closes the pipe: the watchdog sweeps the run (nothing is left
// after a clean teardown) and exits.
func (g *watchdog) release() { g.once.Do(func() { g.w.Close() }) }

// Watchdog is the body of the watchdog process: it waits until stdin
// closes (the coordinator has ended, however), then removes everything
// labelled with runID.
func Watchdog(runID string, stdin io.Reader) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	_, _ = io.Copy(io.Discard, stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	return Sweep(ctx, cli, runID)
}
