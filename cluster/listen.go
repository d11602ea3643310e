package cluster

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// listensOn reports whether process pid holds a socket listening on addr
// (host:port): a listener on the port bound to one of host's addresses or
// to the wildcard. It reads the process's files from /proc, which needs no
// more rights than signalling the process does: so a pid of some other
// process, which a pause would stop instead of the server, is told apart.
func listensOn(ctx context.Context, pid int, addr string) (bool, error) {
	port, ips, err := ResolveListener(ctx, addr)
	if err != nil {
		return false, err
	}
	files, err := ReadProcFiles(pid)
	if err != nil {
		return false, err
	}
	return files.Listens(port, ips)
}

// ResolveListener is addr's port and the addresses its host resolves to,
// as ProcFiles.Listens takes them.
func ResolveListener(ctx context.Context, addr string) (int, []netip.Addr, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return 0, nil, fmt.Errorf("port of %s: %w", addr, err)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return 0, nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	return port, ips, nil
}

// Listens reports whether the process the files are of holds a socket
// listening on port at one of ips or the wildcard: one its network
// namespace's TCP tables list as listening, among its open files.
func (f ProcFiles) Listens(port int, ips []netip.Addr) (bool, error) {
	listeners := map[string]bool{} // socket inodes
	for _, table := range f.TCP {
		err := scanTCPLines(strings.NewReader(table), func(fields []string) {
			if fields[3] != tcpListen {
				return
			}
			ip, p, ok := parseProcAddr(fields[1])
			if !ok || p != port {
				return
			}
			if ip.IsUnspecified() || slices.ContainsFunc(ips, func(a netip.Addr) bool { return a.Unmap() == ip.Unmap() }) {
				listeners[fields[9]] = true
			}
		})
		if err != nil {
			return false, fmt.Errorf("tcp sockets: %w", err)
		}
	}
	for _, target := range f.FDs {
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && listeners[strings.TrimSuffix(inode, "]")] {
			return true, nil
		}
	}
	return false, nil
}

// Socket states of /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpEstablished = "01"
	tcpListen      = "0A"
)

// scanTCPLines calls each with the fields of every socket of a TCP table
// (/proc/PID/net/tcp or tcp6): sl local_address rem_address st
// tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode.
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
