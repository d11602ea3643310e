package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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
	raw, err := ReadProcFiles(pid)
	if err != nil {
		return ProcStat{}, err
	}
	st, err := raw.Stat(port)
	if err != nil {
		return st, fmt.Errorf("process %d: %w", pid, err)
	}
	return st, nil
}

// ReadProcFiles reads process pid's status, open files and TCP tables
// from this host's /proc.
func ReadProcFiles(pid int) (ProcFiles, error) {
	var raw ProcFiles
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return raw, fmt.Errorf("memory of process %d: %w", pid, err)
	}
	raw.Status = string(status)
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return raw, fmt.Errorf("open files of process %d: %w", pid, err)
	}
	for _, f := range fds {
		target, err := os.Readlink(dir + "/" + f.Name())
		if err != nil {
			target = "" // closed meanwhile: counted, as it was listed
		}
		raw.FDs = append(raw.FDs, target)
	}
	for _, file := range []string{"tcp", "tcp6"} {
		table, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, file))
		if err != nil && !os.IsNotExist(err) {
			return raw, fmt.Errorf("connections of process %d: %w", pid, err)
		}
		raw.TCP = append(raw.TCP, string(table))
	}
	return raw, nil
}

// ProcFiles is what ReadProcStat reads of a process's /proc, as text:
// read here, or on the host of --nodes a server runs on (cluster/remote),
// and made a ProcStat by one piece of code.
type ProcFiles struct {
	// Status is /proc/PID/status.
	Status string
	// FDs are the targets of /proc/PID/fd's links ("socket:[INODE]", a
	// path, "" for one closed meanwhile), one per open descriptor.
	FDs []string
	// TCP are the process's namespace's TCP tables (net/tcp, net/tcp6).
	TCP []string
}

// Stat counts what the files say, the connections to port apart.
func (f ProcFiles) Stat(port int) (ProcStat, error) {
	var st ProcStat
	rss, err := parseVmRSS(strings.NewReader(f.Status))
	if err != nil {
		return st, fmt.Errorf("memory: %w", err)
	}
	st.RSS, st.FDs = rss, len(f.FDs)
	established := map[string]bool{} // socket inode: on port
	for _, table := range f.TCP {
		err := scanTCPLines(strings.NewReader(table), func(fields []string) {
			if fields[3] == tcpEstablished {
				_, local, _ := parseProcAddr(fields[1])
				established[fields[9]] = port != 0 && local == port
			}
		})
		if err != nil {
			return st, fmt.Errorf("connections: %w", err)
		}
	}
	for _, target := range f.FDs {
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

// parseVmRSS reads the VmRSS line of a status file, in bytes. A zombie or
// kernel thread has none: an error.
func parseVmRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		num, unit, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if unit != "kB" {
			return 0, fmt.Errorf("VmRSS in %q, not kB", unit)
		}
		kb, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmRSS (a process that exited?)")
}
