package cluster

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// listensOn reports whether process pid holds a socket listening on addr
// (host:port): a listener on the port bound to one of host's addresses or
// to the wildcard. It reads the listening sockets of the process's network
// namespace (/proc/PID/net/tcp, tcp6) and matches their inodes against the
// process's open files (/proc/PID/fd), which needs no more rights than
// signalling the process does: so a pid of some other process, which a
// pause would stop instead of the server, is told apart.
func listensOn(ctx context.Context, pid int, addr string) (bool, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return false, fmt.Errorf("port of %s: %w", addr, err)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return false, fmt.Errorf("resolve %s: %w", host, err)
	}
	listeners := map[string]bool{} // socket inodes
	for _, file := range []string{"tcp", "tcp6"} {
		if err := listeningInodes(fmt.Sprintf("/proc/%d/net/%s", pid, file), port, ips, listeners); err != nil {
			return false, err
		}
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("open files of process %d: %w", pid, err)
	}
	for _, f := range fds {
		target, err := os.Readlink(dir + "/" + f.Name())
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && listeners[strings.TrimSuffix(inode, "]")] {
			return true, nil
		}
	}
	return false, nil
}

// listeningInodes adds to into the inodes of the sockets in the table at
// path (/proc/PID/net/tcp or tcp6) that listen on port at one of ips or
// the wildcard. A table that does not exist (no IPv6) adds nothing.
func listeningInodes(path string, port int, ips []netip.Addr, into map[string]bool) error {
	return scanTCPTable(path, func(fields []string) {
		if fields[3] != tcpListen {
			return
		}
		ip, p, ok := parseProcAddr(fields[1])
		if !ok || p != port {
			return
		}
		if ip.IsUnspecified() || slices.ContainsFunc(ips, func(a netip.Addr) bool { return a.Unmap() == ip.Unmap() }) {
			into[fields[9]] = true
		}
	})
}

// Socket states of /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpEstablished = "01"
	tcpListen      = "0A"
)

// scanTCPTable calls each with the fields of every socket of the table at
// path (/proc/PID/net/tcp or tcp6): sl local_address rem_address st
// tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode. A table that
// does not exist (no IPv6) has none.
func scanTCPTable(path string, each func(fields []string)) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tcp sockets: %w", err)
	}
	defer f.Close()
	return scanTCPLines(f, each)
}

// scanTCPLines is scanTCPTable over a table's text.
func scanTCPLines(r io.Reader, each func(fields []string)) error {
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 10 {
			each(fields)
		}
	}
	return sc.Err()
}

// parseProcAddr parses an address of /proc/net/tcp{,6}: the IP in hex as
// 32-bit words in host (little-endian) order, a colon, the port in hex.
func parseProcAddr(s string) (netip.Addr, int, bool) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return netip.Addr{}, 0, false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, 0, false
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	ip, _ := netip.AddrFromSlice(raw)
	return ip, int(port), true
}
