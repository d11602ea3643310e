package cluster

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// Why a namespace, and not a setting. initdb of PostgreSQL 15 has no -c
// option: it probes /dev/shm, writes dynamic_shared_memory_type=posix into
// postgresql.conf, and its bootstrap and single-user backends then keep
// POSIX segments in /dev/shm (a 26976-byte control segment and a 1 MB one)
// and a System V interlock segment each. A backend killed with the run
// cannot remove them: two /dev/shm segments were left in 8 of 9 runs
// interrupted during initdb, and TestInterruptedDatabaseLeavesNoFiles
// found the System V one too, and the server's own interlock when the run
// ends before the server serves (releaseInterlock only runs then). No
// setting reaches those backends before they start, and deleting segments
// by name afterwards could hit another PostgreSQL's (suites run several
// at once). So initdb and the server run in a mount and IPC namespace of
// their own, with a fresh tmpfs on /dev/shm: the kernel frees both,
// segments and all, when the namespace's last process dies, on every exit
// path, SIGKILL of the coordinator included (the run's cgroup guard kills
// the processes, the kernel does the rest). Nothing of theirs needs the
// host's /dev/shm or System V segments; clients come over TCP.
//
// A template made by initdb once and copied per run would skip initdb
// (1.1-2.2 s of a run here), but making the template is itself an initdb
// that can be interrupted, its cache needs keying by version and options
// and outlives runs, and the server's start-up window would stay open.
// The namespace costs a shell, a mount and setpriv: 8 ms per start
// (10 starts of the same wrapper around true, 2-core VM).
//
// Creating the namespaces and mounting need root (CAP_SYS_ADMIN); as root,
// the child is started as /bin/sh, which mounts the tmpfs and becomes the
// child through setpriv (util-linux), dropping to Spec.RunAs on the way.
// Elsewhere (not root, or no mount or setpriv) the child runs as before
// and the run says so once: an interrupted initdb may then still leave
// segments (the server's dynamic ones are in its data directory, see
// postgresConfig).

// PrivateIPCScript, run by sh in a new mount and IPC namespace, mounts
// the private /dev/shm with its first argument (mount) and execs the rest;
// exit 125 (as unshare(1) and env(1) use) if it cannot. The hosts of
// --nodes run it too.
const PrivateIPCScript = `"$1" -t tmpfs -o mode=1777,nosuid,nodev,noexec locktest-shm /dev/shm || exit 125
shift; exec "$@"`

// privateIPCFallback reports once that children run without the private
// namespace.
var privateIPCFallback sync.Once

// inPrivateIPC rewrites cmd (already built for the child, with attr its
// SysProcAttr) to run in a mount and IPC namespace of its own with a
// private /dev/shm, as user runAs (see Spec.RunAs). It reports whether it
// did and whether the child switches user; when it did not (see above),
// the caller starts cmd as it was.
func inPrivateIPC(cmd *exec.Cmd, runAs string) (done, switched bool, err error) {
	if why := privateIPCWhyNot(runAs); why != "" {
		privateIPCFallback.Do(func() {
			slog.Info("an interrupted PostgreSQL start may leave shared memory behind: no private /dev/shm for it",
				"why", why)
		})
		return false, false, nil
	}
	mount, _ := exec.LookPath("mount")
	setpriv, _ := exec.LookPath("setpriv")
	args := []string{"-c", PrivateIPCScript, "locktest-private-ipc", mount}
	if runAs != "" {
		uid, gid, err := lookupUser(runAs)
		if err != nil {
			return false, false, fmt.Errorf("run as %s: %w", runAs, err)
		}
		// And the parent-death signal the switch of user would clear.
		args = append(append(args, setpriv), SetprivArgs(strconv.FormatUint(uint64(uid), 10), strconv.FormatUint(uint64(gid), 10))...)
		args = append(args, "--pdeathsig=keep", "--")
	}
	cmd.Args = append(append([]string{"/bin/sh"}, args...), append([]string{cmd.Path}, cmd.Args[1:]...)...)
	cmd.Path = "/bin/sh"
	// Go marks / private in the child before it execs, so the tmpfs does
	// not propagate back to the host's /dev/shm.
	cmd.SysProcAttr.Unshareflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
	return true, runAs != "", nil
}

// SetprivArgs are setpriv(1)'s options that make a child user uid of
// group gid keeping what runAs gives a child: CAP_DAC_READ_SEARCH, to
// reach its directory under parents only root may enter. The hosts of
// --nodes switch users with them too.
func SetprivArgs(uid, gid string) []string {
	return []string{"--reuid=" + uid, "--regid=" + gid, "--clear-groups",
		"--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"}
}

// privateIPCWhyNot says why a child to run as user runAs cannot have a
// private /dev/shm and IPC namespace here, or "" if it can.
func privateIPCWhyNot(runAs string) string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("mount"); err != nil {
		return err.Error()
	}
	if _, err := exec.LookPath("setpriv"); runAs != "" && err != nil {
		return err.Error()
	}
	return ""
}
