package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// UserServer is a lock server the user runs and names (--servers, and
// --server-pids for its process): a company lock's own service, or a
// server of a built-in design the user started. A run reaches it through
// its links like a server of its own, so link faults work unchanged; it
// pauses it (SIGSTOP, SIGCONT) when it has the pid; it never starts,
// kills, restarts, reconfigures or re-clocks it.
type UserServer struct {
	// Addr is host:port, as the user gave it.
	Addr string
	// Pid is the server's process id; 0 when not given.
	Pid int
	// Remote: the pid is a process of one of the hosts of --nodes, which
	// the backend checks and signals there (ServerAdopter), not here.
	Remote bool
}

// ParseUserServers pairs --servers addresses with --server-pids (none, or
// one per address in the same order) and checks their form: a host and a
// port 1-65535 each, no address twice, pids whole numbers above 1. It
// touches nothing, so a stored run's settings parse without the servers.
func ParseUserServers(addrs, pids []string) ([]UserServer, error) {
	if len(pids) > 0 && len(pids) != len(addrs) {
		return nil, fmt.Errorf("--server-pids: %d pid(s) for %d server(s): give one per --servers address, in the same order", len(pids), len(addrs))
	}
	seen := map[string]bool{}
	out := make([]UserServer, len(addrs))
	for i, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("--servers %s: not host:port (e.g. 127.0.0.1:6379, [::1]:6379)", a)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || host == "" {
			return nil, fmt.Errorf("--servers %s: not host:port with a port from 1 to 65535", a)
		}
		if seen[a] {
			return nil, fmt.Errorf("--servers: %s given twice: each is one server of the design", a)
		}
		seen[a] = true
		out[i].Addr = a
		if len(pids) > 0 {
			pid, err := strconv.Atoi(pids[i])
			if err != nil || pid <= 1 {
				return nil, fmt.Errorf("--server-pids: %s is no server's process id", pids[i])
			}
			out[i].Pid = pid
		}
	}
	return out, nil
}

// UserDialTimeout bounds the dial that checks a user's server answers
// before a run starts: a server that does not accept a connection in this
// long would time out every client's request.
const UserDialTimeout = 2 * time.Second

// Check says, before anything starts, whether the server can be used: it
// accepts a TCP connection, and its pid (if given) names a running process
// this user may signal that listens on the server's address.
func (s UserServer) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, UserDialTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("--servers %s: cannot connect within %s: %w (is your server running there?)", s.Addr, UserDialTimeout, err)
	}
	conn.Close()
	if s.Pid == 0 || s.Remote {
		return nil
	}
	switch err := syscall.Kill(s.Pid, 0); {
	case errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("--server-pids %d: no such process (the server at %s?)", s.Pid, s.Addr)
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("--server-pids %d: process of another user, which locktest may not signal: run locktest as its user", s.Pid)
	case err != nil:
		return fmt.Errorf("--server-pids %d: %w", s.Pid, err)
	}
	if pidStopped(s.Pid) {
		return fmt.Errorf("--server-pids %d: the process is stopped already: continue it first (kill -CONT %d)", s.Pid, s.Pid)
	}
	// A pause fault stops this pid: if it is not the server's, it stops
	// something else and the server goes on, and the run would pass
	// untested.
	switch listens, err := listensOn(ctx, s.Pid, s.Addr); {
	case err != nil:
		return fmt.Errorf("--server-pids %d: cannot tell whether it is the server at %s: %w", s.Pid, s.Addr, err)
	case !listens:
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", s.Pid))
		return fmt.Errorf("--server-pids %d: process %d (%q) does not listen on %s: give the pid of the server at that address",
			s.Pid, s.Pid, strings.TrimSpace(string(comm)), s.Addr)
	}
	return nil
}

// UserServerName names the i-th user server as a node (in links, fault
// targets and the history): server-0, server-1, …
func UserServerName(i int) string { return fmt.Sprintf("server-%d", i) }

// Adopt makes the user's servers nodes of the cluster, in their order,
// with the given roles, so that links, fault targets and the final heal
// treat them as the cluster's own. Stop and Kill continue a paused one and
// leave it running; Start refuses.
func (c *Cluster) Adopt(ctx context.Context, servers []UserServer, roles []string) ([]*Node, error) {
	nodes := make([]*Node, len(servers))
	names := make([]string, len(servers))
	for i, s := range servers {
		host, port, err := net.SplitHostPort(s.Addr)
		if err != nil {
			return nil, fmt.Errorf("adopt %s: %w", s.Addr, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("adopt %s: port: %w", s.Addr, err)
		}
		n := &Node{Name: UserServerName(i), Kind: "user", Port: p, role: roles[i]}
		n.SetHost(host)
		n.proc = &userProcess{name: n.Name, server: s}
		nodes[i], names[i] = n, n.Name
	}
	if a, ok := c.backend.(ServerAdopter); ok {
		// The servers run on other hosts: the backend signals and
		// guards them there.
		procs, err := a.AdoptServers(ctx, names, servers)
		if err != nil {
			return nil, err
		}
		for i, p := range procs {
			nodes[i].proc = p
		}
	} else if err := c.guardUserServers(servers); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, nodes...)
	c.mu.Unlock()
	return nodes, nil
}

// guardUserServers starts, when the servers have pids, a shell that waits
// for its stdin to close and then continues them: the coordinator holds
// the only write end, which the kernel closes however the coordinator
// ends, SIGKILL included. Stop and Kill continue the servers themselves;
// the guard covers the one exit no code of ours runs on, so that a
// server of the user's is never left stopped. It runs in its own process
// group (Ctrl-C does not reach it) and has no parent-death signal.
func (c *Cluster) guardUserServers(servers []UserServer) error {
	args := []string{"-c", `read -r _; kill -CONT "$@" 2>/dev/null`, "locktest-guard"}
	for _, s := range servers {
		if s.Pid != 0 {
			args = append(args, strconv.Itoa(s.Pid))
		}
	}
	if len(args) == 3 {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("guard of your servers: %w", err)
	}
	_, err = Start(Spec{Name: "guard of your servers", Path: "/bin/sh", Args: args, Dir: "/", Stdin: r, Outlive: true})
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("guard of your servers: %w", err)
	}
	c.mu.Lock()
	c.guard = w
	c.mu.Unlock()
	return nil
}

// userProcess is the Instance of a user's server: signals to its pid, and
// nothing that would end it.
type userProcess struct {
	name   string
	server UserServer

	mu     sync.Mutex
	paused bool
}

func (u *userProcess) signal(sig syscall.Signal) error {
	if u.server.Pid == 0 {
		return fmt.Errorf("%s (%s): no pid given (--server-pids), so locktest cannot signal it", u.name, u.server.Addr)
	}
	if err := syscall.Kill(u.server.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s to %s (pid %d): %w", sig, u.name, u.server.Pid, err)
	}
	return nil
}

// Pause stops the server's process (the pid alone: its group may be the
// user's shell job).
func (u *userProcess) Pause() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	u.paused = true
	return nil
}

// Resume continues the server's process; without a pid there is nothing
// to continue.
func (u *userProcess) Resume() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.paused = false
	if u.server.Pid == 0 {
		return nil
	}
	return u.signal(syscall.SIGCONT)
}

func (u *userProcess) Paused() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.paused
}

func (u *userProcess) Stopped() bool { return u.server.Pid != 0 && pidStopped(u.server.Pid) }

// Exited reports a server whose pid is gone; without a pid it cannot
// tell, and takes the server for running.
func (u *userProcess) Exited() (bool, error) {
	if u.server.Pid == 0 || !errors.Is(syscall.Kill(u.server.Pid, 0), syscall.ESRCH) {
		return false, nil
	}
	return true, fmt.Errorf("process %d is gone", u.server.Pid)
}

// Kill continues the server and refuses the rest: a user's server is
// never killed.
func (u *userProcess) Kill() error {
	if err := u.Resume(); err != nil {
		return err
	}
	return fmt.Errorf("%s (%s) is your server: locktest does not kill it", u.name, u.server.Addr)
}

// Stop, the end of the run, continues the server whether or not this run
// paused it last (a SIGCONT to a running process changes nothing), and
// leaves it running.
func (u *userProcess) Stop(time.Duration) error { return u.Resume() }

func (u *userProcess) HostPid() (int, error) {
	if u.server.Pid == 0 {
		return 0, fmt.Errorf("%s (%s): no pid given (--server-pids)", u.name, u.server.Addr)
	}
	return u.server.Pid, nil
}
