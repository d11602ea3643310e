package cluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A process group and Pdeathsig reach only so far: a child's own children
// may leave the group (setsid, a double-forked daemon) and outlive it, and
// a user's lock program is free to fork whatever it likes. So the
// coordinator and every worker are child subreapers: an orphan anywhere
// below them is reparented to them instead of to init, stays their
// descendant, and dies with the tree on every exit path.

// BecomeSubreaper makes the calling process the reaper of its orphaned
// descendants (prctl PR_SET_CHILD_SUBREAPER), so that KillDescendants
// finds them however they detached.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}

// outliving holds the pids of processes meant to outlive this one (the
// docker watchdog, which removes containers after the coordinator's end):
// KillDescendants spares them and their trees.
var outliving sync.Map

// Outlive exempts pid, a child meant to outlive this process, from
// KillDescendants.
func Outlive(pid int) { outliving.Store(pid, true) }

// KillTree kills pid and every process descending from it. It first stops
// the whole tree with SIGSTOP, scanning again until no new process shows
// up, so that nothing can fork away while it kills; then it kills them all.
func KillTree(pid int) {
	killStopped(stopTree(pid, true))
}

// KillDescendants kills every process descending from this one (its
// children included), and reaps those no Process waits for. It is the last
// step of every exit path of the coordinator and the workers.
func KillDescendants() {
	self := os.Getpid()
	procs := stopTree(self, false)
	killStopped(procs)
	tracked := trackedPids()
	deadline := time.Now().Add(time.Second)
	for _, p := range procs {
		if tracked[p.pid] || p.ppid != self {
			continue // exec.Cmd reaps its own; a grandchild's parent reaps it
		}
		for {
			wpid, err := syscall.Wait4(p.pid, nil, syscall.WNOHANG, nil)
			if wpid != 0 || err != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// procEntry is one process of a tree as /proc showed it.
type procEntry struct{ pid, ppid int }

// stopTree sends SIGSTOP to root (if withRoot) and to every descendant,
// rescanning until a scan finds no process it has not stopped yet.
func stopTree(root int, withRoot bool) []procEntry {
	seen := map[int]bool{}
	var out []procEntry
	if withRoot {
		if err := syscall.Kill(root, syscall.SIGSTOP); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		seen[root] = true
		out = append(out, procEntry{pid: root})
	}
	for range 100 { // a fork bomb must not hold the harness forever
		found := false
		for _, p := range descendants(root) {
			if seen[p.pid] {
				continue
			}
			seen[p.pid], found = true, true
			_ = syscall.Kill(p.pid, syscall.SIGSTOP)
			out = append(out, p)
		}
		if !found {
			break
		}
	}
	return out
}

// killStopped kills the stopped processes: SIGKILL ends a stopped process
// without letting it run again.
func killStopped(procs []procEntry) {
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// descendants lists the processes below root, from /proc, but for those
// meant to outlive it.
func descendants(root int) []procEntry {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := ParentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []procEntry
	queue := []int{root}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range children[parent] {
			if _, spared := outliving.Load(c); spared {
				continue
			}
			out = append(out, procEntry{pid: c, ppid: parent})
			queue = append(queue, c)
		}
	}
	return out
}

// ParentOf reads a process's parent from /proc/PID/stat. Zombies are
// listed too: their parent may have to reap them.
func ParentOf(pid int) (int, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may contain anything.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}
