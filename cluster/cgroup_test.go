package cluster

import (
	"os"
	"testing"
)

// TestRunCgroupGuard: what a run starts, a daemon in a session of its own
// included, dies when the coordinator's end closes the guard's pipe, with
// no code of the coordinator's running (as after SIGKILL): the guard kills
// the cgroup and removes it.
func TestRunCgroupGuard(t *testing.T) {
	if err := RunCgroupSupport(); err != nil {
		t.Skipf("no run cgroup here: %v", err)
	}
	if err := ConfineRun(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(endRunCgroup)
	const marker = "sleep 4711.26"
	script := `sleep 4711.261 & (setsid sleep 4711.262 &); sleep 4711.263`
	if _, err := Start(Spec{Name: "tree", Path: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tree to start", func() bool { return len(running(marker)) == 3 })
	runCgroup.Lock()
	dir := runCgroup.dir
	runCgroup.guard.Close() // as the kernel does when the coordinator dies
	runCgroup.fd.Close()
	runCgroup.dir, runCgroup.fd, runCgroup.guard = "", nil, nil
	runCgroup.Unlock()
	waitFor(t, "the guard to kill the tree", func() bool { return len(running(marker)) == 0 })
	waitFor(t, "the guard to remove the cgroup", func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) })
}
