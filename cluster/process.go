package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec describes a process to start.
type Spec struct {
	Name string
	Path string
	Args []string
	Dir  string
	Env  []string // added to the coordinator's environment
	// Log receives stdout and stderr unless Stdout is set.
	Log    io.Writer
	Stdin  io.Reader
	Stdout io.Writer
	// SameGroup keeps the child in the caller's process group instead of
	// its own, so that a signal to the caller's group (a pause fault on a
	// worker) reaches the child too. Signals sent through the Process then
	// go to the child alone.
	SameGroup bool
	// RunAs, when the coordinator runs as root, runs the child as this
	// user: servers such as PostgreSQL refuse to run as root. The child
	// keeps CAP_DAC_READ_SEARCH so that it can reach its directory under
	// parents only root may enter (a store in /root, a test's temp dir).
	// Go changes into Dir before it raises that capability, so such a
	// child starts in / instead: give it absolute paths. Pdeathsig is set
	// after the switch of user, so it still holds.
	RunAs string
	// Outlive spares the child the parent-death signal and the run's
	// cgroup (ConfineRun): a guard that must act once the coordinator is
	// gone (see Cluster.Adopt) and then exits.
	Outlive bool
	// PrivateIPC runs the child in a mount and IPC namespace of its own,
	// with a private /dev/shm, so that no shared memory it leaves outlives
	// it; as root only (see privateipc.go).
	PrivateIPC bool
	// Net, when set, runs the child in that endpoint's network namespace
	// (a run's lab, --network netns).
	Net *Endpoint
}

// Process is a running child in its own process group.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	// group: the process leads its own group, and signals go to all of it.
	group bool

	mu     sync.Mutex
	paused bool
	err    error
}

// Start starts a child process. The child gets its own process group (so a
// signal reaches everything it forks) and SIGKILL when the coordinator dies.
func Start(spec Spec) (*Process, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdin = spec.Stdin
	cmd.Stdout = spec.Log
	if spec.Stdout != nil {
		cmd.Stdout = spec.Stdout
	}
	cmd.Stderr = spec.Log
	// A log that is no file is fed through a pipe, which a grandchild may
	// hold open after the child exited: Wait gives up on it after this.
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !spec.SameGroup, Pdeathsig: syscall.SIGKILL}
	if spec.Outlive {
		cmd.SysProcAttr.Pdeathsig = 0
	} else {
		intoRunCgroup(cmd.SysProcAttr)
	}
	wrapped, as := false, false
	var err error
	if spec.PrivateIPC {
		wrapped, as, err = inPrivateIPC(cmd, spec.RunAs)
	}
	if !wrapped && err == nil {
		as, err = runAs(cmd.SysProcAttr, spec.RunAs)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	if as {
		cmd.Dir = "/"
	}
	if err := startIn(cmd, spec.Net.handle()); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	p := &Process{Name: spec.Name, cmd: cmd, done: make(chan struct{}), group: !spec.SameGroup}
	track(p)
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		untrack(p)
		close(p.done)
	}()
	return p, nil
}

// runAs sets attr to run the child as user name and reports whether it
// did: only a root coordinator switches; otherwise the child runs as the
// coordinator's user.
func runAs(attr *syscall.SysProcAttr, name string) (bool, error) {
	if name == "" || os.Geteuid() != 0 {
		return false, nil
	}
	uid, gid, err := lookupUser(name)
	if err != nil {
		return false, fmt.Errorf("run as %s: %w", name, err)
	}
	attr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
	attr.AmbientCaps = []uintptr{unix.CAP_DAC_READ_SEARCH}
	return true, nil
}

// lookupUser returns the uid and gid of the user name.
func lookupUser(name string) (uid, gid uint32, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("uid %q: %w", u.Uid, err)
	}
	group, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("gid %q: %w", u.Gid, err)
	}
	return uint32(id), uint32(group), nil
}

// Pid returns the process id (also its process group id, unless started
// with SameGroup).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// HostPid is Pid, for Instance.
func (p *Process) HostPid() (int, error) { return p.Pid(), nil }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Signal sends sig to the process group (to the process alone when it was
// started with SameGroup); to a process that has exited it does nothing
// (its pid may already belong to someone else).
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done: // not Exited: callers such as Pause hold p.mu
		return nil
	default:
	}
	target := p.Pid()
	if p.group {
		target = -target
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s to %s: %w", sig, p.Name, err)
	}
	return nil
}

// Pause stops the process group with SIGSTOP, as a stop-the-world pause.
func (p *Process) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.paused = true
	return nil
}

// Resume continues a paused process group.
func (p *Process) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	p.paused = false
	return nil
}

// Stopped reports whether the kernel has the process stopped (state T),
// whoever stopped it: the check behind "nothing is left paused".
func (p *Process) Stopped() bool {
	if exited, _ := p.Exited(); exited {
		return false
	}
	return pidStopped(p.Pid())
}

// pidStopped reports whether the kernel has process pid stopped (state T,
// or t under a tracer); false for a pid that does not exist.
func pidStopped(pid int) bool {
	st := ProcState(pid)
	return st == "T" || st == "t"
}

// ProcState is the state letter of process pid in /proc/PID/stat (R, S,
// T, Z, …), "" when there is no such process.
func ProcState(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// Paused reports whether the process is paused by us.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Kill kills the process and everything it started (KillTree: the whole
// tree is stopped before any of it dies, so nothing forks away), and any
// member of its group that left the tree, then waits for the exit. A
// paused process dies too: SIGKILL needs no SIGCONT.
func (p *Process) Kill() error {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
	select {
	case <-p.done: // its pid may already belong to someone else
		return nil
	default:
	}
	KillTree(p.Pid())
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// Stop asks the process to exit with SIGTERM and kills it after grace.
// Whatever of its group outlives it is killed.
func (p *Process) Stop(grace time.Duration) error {
	if p.Paused() {
		if err := p.Resume(); err != nil {
			return err
		}
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		if p.group {
			// While a member lives, no new process can take the group's
			// id: the kill reaches only what the server left behind.
			_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		}
		return nil
	case <-time.After(grace):
		slog.Warn("process did not stop in time; killing", "process", p.Name, "grace", grace)
		return p.Kill()
	}
}

// Wait waits for the process to exit or ctx to end.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		_, err := p.Exited()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dialReady dials addr for a readiness probe, bounded by ctx's deadline
// for every read and write that follows.
func dialReady(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	return conn, nil
}
