package cluster

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStat is what a process holds at one moment, as /proc says: the
// resources a lock server leaks when it keeps something per client it
// should have let go (a session, a lease, a connection).
type ProcStat struct {
	// RSS is the resident set size in bytes (VmRSS).
	RSS int64
	// FDs counts open file descriptors, sockets among them.
	FDs int
	// TCP counts established TCP connections the process holds, both the
	// ones it accepted and the ones it dialed; listeners are not counted.
	TCP int
	// Clients counts those of TCP on the port ReadProcStat was given, the
	// server's own: the ones its clients (and replicas, sentinels) dialed,
	// not a consensus member's connections to its peers, which it opens
	// as the load asks and keeps.
	Clients int
}

// ReadProcStat reads process pid's resident memory, open files and
// established TCP connections from /proc, telling apart those to port
// (none when port is 0). The connections are the
// process's socket descriptors that its network namespace's TCP tables
// (/proc/PID/net/tcp, tcp6) list as established: what the kernel holds
// for it, whether or not the server still counts the client. Reading
// another user's process's descriptors needs the rights to signal it; a
// process of the run's own is always readable.
func ReadProcStat(pid, port int) (ProcStat, error) {
	var st ProcStat
	rss, err := vmRSS(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, fmt.Errorf("memory of process %d: %w", pid, err)
	}
	st.RSS = rss
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return st, fmt.Errorf("open files of process %d: %w", pid, err)
	}
	st.FDs = len(fds)
	established := map[string]bool{} // socket inode: on port
	for _, file := range []string{"tcp", "tcp6"} {
		err := scanTCPTable(fmt.Sprintf("/proc/%d/net/%s", pid, file), func(fields []string) {
			if fields[3] == tcpEstablished {
				_, local, _ := parseProcAddr(fields[1])
				established[fields[9]] = port != 0 && local == port
			}
		})
		if err != nil {
			return st, fmt.Errorf("connections of process %d: %w", pid, err)
		}
	}
	for _, f := range fds {
		target, err := os.Readlink(dir + "/" + f.Name())
		if err != nil {
			continue // closed meanwhile
		}
		inode, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		if onPort, ok := established[strings.TrimSuffix(inode, "]")]; ok {
			st.TCP++
			if onPort {
				st.Clients++
			}
		}
	}
	return st, nil
}

// vmRSS reads the VmRSS line of a /proc/PID/status file, in bytes. A
// zombie or kernel thread has none: an error.
func vmRSS(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		num, unit, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if unit != "kB" {
			return 0, fmt.Errorf("%s: VmRSS in %q, not kB", path, unit)
		}
		kb, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: VmRSS: %w", path, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no VmRSS (a process that exited?)", path)
}
