package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// running lists the live processes whose command line starts with marker.
func running(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if ppid, ok := ParentOf(pid); !ok || ppid == 0 {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // dead, waiting to be reaped
		}
		if cl := strings.ReplaceAll(string(cmdline), "\x00", " "); strings.HasPrefix(cl, marker) {
			found = append(found, e.Name()+": "+cl)
		}
	}
	return found
}

// waitFor polls until cond holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNothingOutlivesItsTree starts a real process tree: a shell with a
// child in its group, a grandchild, and a double-forked daemon in a
// session of its own. Kill takes the tree; KillDescendants, in a
// subreaper, takes the daemon, which left the tree.
func TestNothingOutlivesItsTree(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(KillDescendants)
	const marker = "sleep 4711.25"
	script := `sleep 4711.251 & sh -c 'sleep 4711.252; true' & (setsid sleep 4711.253 &); sleep 4711.254`
	p, err := Start(Spec{Name: "tree", Path: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tree to start", func() bool { return len(running(marker)) == 4 })
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tree to die", func() bool { return len(running(marker)) == 1 })
	if left := running(marker); !strings.Contains(left[0], "4711.253") {
		t.Fatalf("Kill left the wrong process: %v", left)
	}
	KillDescendants()
	waitFor(t, "the daemon to die", func() bool { return len(running(marker)) == 0 })
}
