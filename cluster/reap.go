package cluster

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"github.com/vishvananda/netns"
)

// Pdeathsig fires when the *thread* that forked the child exits, not the
// process. Go may retire threads, so all children are forked from one
// goroutine locked to a thread that never exits.
var (
	spawnOnce sync.Once
	spawnReq  chan spawnCall
)

type spawnCall struct {
	fn func() error
	// net, when open, is the network namespace fn runs in: the spawning
	// thread enters it and returns (see Endpoint).
	net  netns.NsHandle
	done chan error
}

func startLocked(cmd *exec.Cmd) error { return startIn(cmd, netns.None()) }

// startIn starts cmd from the spawning thread, in the network namespace
// net when it is open.
func startIn(cmd *exec.Cmd, net netns.NsHandle) error { return runIn(net, cmd.Start) }

// runIn runs fn on the spawning thread, inside the network namespace net
// when it is open. The thread is back in its own namespace afterwards,
// whatever fn did to it (newNamespace moves it into a new one), so every
// child is born where it was asked to be.
func runIn(net netns.NsHandle, fn func() error) error {
	spawnOnce.Do(func() {
		spawnReq = make(chan spawnCall)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			home, homeErr := netns.Get()
			for c := range spawnReq {
				c.done <- spawnOn(c, home, homeErr)
			}
		}()
	})
	done := make(chan error, 1)
	spawnReq <- spawnCall{fn, net, done}
	return <-done
}

// spawnOn runs c.fn on the spawning thread, which is in its home namespace
// before and after.
func spawnOn(c spawnCall, home netns.NsHandle, homeErr error) error {
	if homeErr != nil {
		if c.net.IsOpen() {
			return fmt.Errorf("enter a network namespace: own namespace: %w", homeErr)
		}
		// Without a handle on its own namespace the thread cannot have
		// moved: newNamespace and Endpoint need one.
		return c.fn()
	}
	if c.net.IsOpen() {
		if err := netns.Set(c.net); err != nil {
			return fmt.Errorf("enter a network namespace: %w", err)
		}
	}
	err := c.fn()
	returnHome(home)
	return err
}

// returnHome puts the spawning thread back in its own network namespace
// if it left it: by entering an endpoint's, or by netns.New, which moves
// the thread into the namespace it makes. Left there, the next child,
// even a proxied run's, would be born in that namespace and listen where
// its coordinator cannot reach it. A thread that never moved is left
// alone, so a container without CAP_SYS_ADMIN, which cannot setns even to
// its own namespace, spawns as usual.
func returnHome(home netns.NsHandle) {
	now, err := netns.Get()
	if err == nil {
		defer now.Close()
		if now.Equal(home) {
			return
		}
		err = netns.Set(home)
	}
	if err != nil {
		// Every later child would be born in the wrong namespace.
		panic(fmt.Sprintf("spawning thread cannot return to its network namespace: %v", err))
	}
}

// live tracks every process started and not yet reaped, so that KillAll can
// stop them on any exit path.
var (
	liveMu sync.Mutex
	live   = map[*Process]struct{}{}
)

func track(p *Process) {
	liveMu.Lock()
	live[p] = struct{}{}
	liveMu.Unlock()
}

func untrack(p *Process) {
	liveMu.Lock()
	delete(live, p)
	liveMu.Unlock()
}

// openBackends are the clusters NewOn made whose backend is not closed
// yet, so that KillAll can close them: a container backend removes the
// run's containers as it closes.
var (
	openMu       sync.Mutex
	openBackends = map[*Cluster]struct{}{}
)

func trackBackend(c *Cluster) {
	openMu.Lock()
	openBackends[c] = struct{}{}
	openMu.Unlock()
}

// closeBackend closes the cluster's backend once, from Stop or KillAll,
// whichever comes first.
func (c *Cluster) closeBackend() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.backend.Close()
		openMu.Lock()
		delete(openBackends, c)
		openMu.Unlock()
	})
	return c.closeErr
}

// trackedPids returns the pids of the processes a Process waits for.
func trackedPids() map[int]bool {
	liveMu.Lock()
	defer liveMu.Unlock()
	pids := make(map[int]bool, len(live))
	for p := range live {
		pids[p.Pid()] = true
	}
	return pids
}

// KillAll kills every process this coordinator started that is still
// running, whatever they started in turn (KillDescendants), and closes
// every backend still open (removing the containers it has), and kills
// what is left in the run's cgroup (ConfineRun). It is the last line of
// defence on error and interrupt paths.
func KillAll() {
	liveMu.Lock()
	procs := make([]*Process, 0, len(live))
	for p := range live {
		procs = append(procs, p)
	}
	liveMu.Unlock()
	for _, p := range procs {
		_ = p.Kill()
	}
	KillDescendants()
	openMu.Lock()
	clusters := make([]*Cluster, 0, len(openBackends))
	for c := range openBackends {
		clusters = append(clusters, c)
	}
	openMu.Unlock()
	for _, c := range clusters {
		_ = c.closeBackend()
	}
	endRunCgroup()
}
