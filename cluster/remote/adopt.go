package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/locktest/locktest/cluster"
)

// Exit statuses of adoptScript, each a reason the pid cannot be adopted.
const (
	adoptGone    = 3
	adoptStopped = 4
	adoptDenied  = 5
)

// adoptScript prints the start time and name of process pid, if it is
// running and the login may signal it.
func adoptScript(pid int) string {
	return fmt.Sprintf(`p=%d
s=$(cat /proc/$p/stat 2>/dev/null) || exit %d
set -- ${s##*")"}
case "$1" in T|t) exit %d;; esac
kill -0 $p 2>/dev/null || exit %d
echo "${20}"
cat /proc/$p/comm`, pid, adoptGone, adoptStopped, adoptDenied)
}

// contScript continues process pid if it is still the process that
// started at start: what heal does for a server of the user's that a
// killed coordinator left stopped.
func contScript(pid int, start string) string {
	return sameProcess(pid, start, "exit 0") + "kill -CONT $p\nexit 0"
}

// AdoptServers makes the user's servers (--servers, --server-pids) on the
// hosts of --nodes nodes of the run: each pid must be a running process of
// the host its address names, one the login may signal, listening on that
// address. Each host gets a guard, a session that continues its servers
// when its input ends: at the end of the run, or when the coordinator dies
// and its connection with it, so a server of the user's is not left
// stopped (heal continues any the guard could not).
func (b *Backend) AdoptServers(ctx context.Context, names []string, servers []cluster.UserServer) ([]cluster.Instance, error) {
	out := make([]cluster.Instance, len(servers))
	guarded := map[*Host][]*instance{}
	for i, s := range servers {
		p, err := adoptOn(ctx, b.hosts, names[i], s)
		if err != nil {
			return nil, err
		}
		p.journal = b.journal
		out[i] = p
		guarded[p.host] = append(guarded[p.host], p)
	}
	for h, ps := range guarded {
		b.guard(h, ps)
	}
	return out, nil
}

// CheckServers checks, before a run starts, what AdoptServers will: that
// each of the user's servers is a running process of its host that the
// login may signal, listening on its address.
func CheckServers(ctx context.Context, hosts []*Host, servers []cluster.UserServer) error {
	for i, s := range servers {
		if _, err := adoptOn(ctx, hosts, cluster.UserServerName(i), s); err != nil {
			return err
		}
	}
	return nil
}

// adoptOn adopts server s on the host of hosts its address names.
func adoptOn(ctx context.Context, hosts []*Host, name string, s cluster.UserServer) (*instance, error) {
	host, _, _ := net.SplitHostPort(s.Addr)
	for _, h := range hosts {
		if h.Name == host || h.IP == host {
			return adopt(ctx, h, name, s)
		}
	}
	return nil, serverErrorf("--servers %s: %s is none of the hosts of --nodes, where its pid would be", s.Addr, host)
}

// adopt checks server s on h and returns it as an adopted instance.
func adopt(ctx context.Context, h *Host, name string, s cluster.UserServer) (*instance, error) {
	if s.Pid == 0 {
		return nil, serverErrorf("--servers %s on host %s: give its pid (--server-pids): on another host, locktest only acts on a server through its pid", s.Addr, h.Name)
	}
	out, err := h.Run(ctx, adoptScript(s.Pid), nil)
	var rerr *RemoteError
	if errors.As(err, &rerr) {
		switch rerr.Status {
		case adoptGone:
			return nil, serverErrorf("--server-pids %d: no such process on host %s (the server at %s?)", s.Pid, h.Name, s.Addr)
		case adoptStopped:
			return nil, serverErrorf("--server-pids %d: the process is stopped already on host %s: continue it first (kill -CONT %d there)", s.Pid, h.Name, s.Pid)
		case adoptDenied:
			return nil, serverErrorf("--server-pids %d: on host %s, %s may not signal it: log in as its user or root (--ssh-user)", s.Pid, h.Name, h.user)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--server-pids %d on host %s: %w", s.Pid, h.Name, err)
	}
	start, comm, _ := strings.Cut(strings.TrimSpace(out), "\n")
	p := &instance{name: name, host: h, adopted: true, pid: s.Pid, started: start}
	// A pause stops this pid: were it not the server's, the server would
	// go on and the run pass untested.
	port, ips, err := cluster.ResolveListener(ctx, s.Addr)
	if err != nil {
		return nil, fmt.Errorf("--servers %s: %w", s.Addr, err)
	}
	_, files, err := p.ProcFiles()
	if err != nil {
		return nil, fmt.Errorf("--server-pids %d: %w", s.Pid, err)
	}
	switch listens, err := files.Listens(port, ips); {
	case err != nil:
		return nil, fmt.Errorf("--server-pids %d on host %s: cannot tell whether it is the server at %s: %w", s.Pid, h.Name, s.Addr, err)
	case !listens:
		return nil, serverErrorf("--server-pids %d: process %d (%q) on host %s does not listen on %s: give the pid of the server at that address",
			s.Pid, s.Pid, comm, h.Name, s.Addr)
	}
	return p, nil
}

// guard starts h's guard of ps: a session that waits for its input to end
// and then continues each of them that is still the process adopted. The
// session's input is the backend's to close (Close); when the coordinator
// dies, sshd sees its connection end and closes it too.
func (b *Backend) guard(h *Host, ps []*instance) {
	pids, starts := make([]int, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		pids[i], starts[i] = p.ids()
	}
	r, w := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := h.Run(context.Background(), guardScript(pids, starts), r); err != nil {
			b.log.Warn("the guard of your servers ended", "host", h.Name, "err", err)
		}
	}()
	b.mu.Lock()
	b.guards = append(b.guards, guard{w: w, done: done})
	b.mu.Unlock()
}

// guardScript waits for its input to end, ignoring the hangup a closing
// session may send, then continues each process pids[i] that is still the
// one that started at starts[i].
func guardScript(pids []int, starts []string) string {
	var script strings.Builder
	script.WriteString("trap '' HUP\nread -r _\n")
	for i, pid := range pids {
		script.WriteString("(" + contScript(pid, starts[i]) + ")\n") // a subshell: contScript exits
	}
	return script.String()
}

// guard is one host's guard session: closing w ends it.
type guard struct {
	w    *io.PipeWriter
	done chan struct{}
}

// closeGuards ends the guards, which continue the user's servers, and
// waits for them a while.
func (b *Backend) closeGuards() {
	b.mu.Lock()
	guards := b.guards
	b.guards = nil
	b.mu.Unlock()
	for _, g := range guards {
		g.w.Close()
	}
	for _, g := range guards {
		select {
		case <-g.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// ServerError is a server of the user's that cannot be adopted as given:
// the user's to fix.
type ServerError struct{ msg string }

func (e *ServerError) Error() string { return e.msg }

func serverErrorf(format string, args ...any) error {
	return &ServerError{fmt.Sprintf(format, args...)}
}
