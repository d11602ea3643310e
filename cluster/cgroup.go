package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Why a cgroup, and who kills. The subreaper (tree.go) finds every
// descendant only while the coordinator and the workers live to look: a
// SIGKILLed coordinator runs no code, its workers die by their
// parent-death signal, and a lock client's child that left its session
// (setsid) is re-parented to init and lives on. A subreaper guard would
// have to be an ancestor of the whole run to inherit such orphans, which
// the process the user starts and may kill cannot hand on. A cgroup holds
// its members however they detach: every child the coordinator starts is
// born into the run's cgroup (clone3 CLONE_INTO_CGROUP, so nothing runs
// outside it even for an instant), and a guard outside it, a shell waiting
// for a pipe only the coordinator writes, kills the cgroup through
// cgroup.kill when the kernel closes that pipe, however the coordinator
// ended. The coordinator itself stays outside, so that on its own exit
// paths it can kill the cgroup and remove it itself. Measured on a 2-core
// VM (TestExecTreeDiesWithRun/killed): 6 setsid'd sleeps survived a
// SIGKILL before, none after; 9 processes of 3 clients were gone 22-68 ms
// after the SIGKILL (3 runs, polled with pgrep); making the cgroup and its
// guard costs a coordinator 1-4 ms. Creating a cgroup needs cgroup v2 with
// cgroup.kill (Linux 5.14) and a cgroup this user may write (root, or a
// delegated one, as systemd gives a user's session); elsewhere a run falls
// back to the subreaper alone, which covers every exit but SIGKILL.

// runCgroup is the cgroup of this coordinator's children, once ConfineRun
// made it.
var runCgroup struct {
	sync.Mutex
	dir   string   // its directory in the cgroup file system
	fd    *os.File // open on dir: the CgroupFD children are born into
	guard *os.File // write end of the guard's pipe
}

// ConfineRun creates a cgroup for every process this coordinator starts
// from now on (but those meant to outlive it, Spec.Outlive) and a guard
// that kills them all once the coordinator is gone. An error says why
// there is none; the run then relies on the subreaper.
func ConfineRun() error {
	dir, err := makeRunCgroup()
	if err != nil {
		return err
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return fmt.Errorf("run cgroup: %w", err)
	}
	guard, err := startCgroupGuard(dir)
	if err != nil {
		fd.Close()
		os.Remove(dir)
		return err
	}
	runCgroup.Lock()
	runCgroup.dir, runCgroup.fd, runCgroup.guard = dir, fd, guard
	runCgroup.Unlock()
	return nil
}

// RunCgroupSupport says why ConfineRun cannot confine a run here, or nil
// if it can: it makes a run cgroup and removes it again.
func RunCgroupSupport() error {
	dir, err := makeRunCgroup()
	if err != nil {
		return err
	}
	return os.Remove(dir)
}

// makeRunCgroup creates an empty cgroup below this process's own, one
// that can be killed as a whole.
func makeRunCgroup() (string, error) {
	parent, err := ownCgroupDir()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(parent, "locktest-")
	if err != nil {
		return "", fmt.Errorf("run cgroup: %w", err)
	}
	// The root cgroup has no cgroup.kill: ask the new one.
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("run cgroup: no cgroup.kill (Linux 5.14 or later): %w", err)
	}
	return dir, nil
}

// cgroupGuardScript waits for its stdin to close, kills the cgroup $1 and
// removes it once its members are gone (for up to 5 s). If the
// coordinator removed it already, there is nothing to do.
const cgroupGuardScript = `read -r _; echo 1 > "$1/cgroup.kill" 2>/dev/null || exit 0
i=0; until rmdir "$1" 2>/dev/null || [ $i -ge 100 ]; do sleep 0.05; i=$((i+1)); done`

// startCgroupGuard starts the guard of the cgroup dir in a session of its
// own (Ctrl-C to the coordinator's group does not reach it) and without a
// parent-death signal, outside the cgroup, and returns the write end of
// its pipe. It is no tracked Process: KillAll must not kill it.
func startCgroupGuard(dir string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("run cgroup guard: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", cgroupGuardScript, "locktest-cgroup-guard", dir)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = startLocked(cmd)
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("run cgroup guard: %w", err)
	}
	Outlive(cmd.Process.Pid)
	go func() { _ = cmd.Wait() }() // reap it when it exits
	return w, nil
}

// intoRunCgroup has a child be born into the run's cgroup, if there is one.
func intoRunCgroup(attr *syscall.SysProcAttr) {
	runCgroup.Lock()
	defer runCgroup.Unlock()
	if runCgroup.fd != nil {
		attr.UseCgroupFD = true
		attr.CgroupFD = int(runCgroup.fd.Fd())
	}
}

// endRunCgroup kills whatever is left in the run's cgroup, waits until it
// is empty (up to 5 s), removes it and lets the guard go: the last step of
// the coordinator's own exit paths (KillAll).
func endRunCgroup() {
	runCgroup.Lock()
	defer runCgroup.Unlock()
	if runCgroup.dir == "" {
		return
	}
	dir := runCgroup.dir
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		slog.Warn("could not kill the run's cgroup", "cgroup", dir, "err", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			slog.Warn("the run's cgroup did not empty; its guard will remove it", "cgroup", dir, "err", err)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	runCgroup.fd.Close()
	runCgroup.guard.Close()
	runCgroup.dir, runCgroup.fd, runCgroup.guard = "", nil, nil
}

// ownCgroupDir returns the directory of this process's cgroup v2 from
// /proc/self/cgroup and the cgroup2 mount in /proc/self/mountinfo (on a
// hybrid system, /sys/fs/cgroup/unified).
func ownCgroupDir() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("run cgroup: %w", err)
	}
	path, ok := "", false
	for _, line := range strings.Split(string(data), "\n") {
		if p, found := strings.CutPrefix(line, "0::"); found {
			path, ok = p, true
		}
	}
	if !ok {
		return "", errors.New("run cgroup: this process is in no cgroup v2")
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("run cgroup: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	for sc.Scan() {
		// ID PARENT DEV ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, found := strings.Cut(sc.Text(), " - ")
		f := strings.Fields(pre)
		if !found || len(f) < 5 || !strings.HasPrefix(post, "cgroup2 ") || f[3] != "/" {
			continue
		}
		return filepath.Join(f[4], path), nil
	}
	return "", errors.New("run cgroup: no cgroup v2 file system is mounted")
}
