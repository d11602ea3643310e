package cluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// shutdownConnectionsTo shuts down every TCP connection of process pid
// whose far end is port, and returns how many it shut down. It works on
// a duplicate of each socket (pidfd_getfd), so the process sees its peer
// hang up and nothing else changes; that takes ptrace rights over pid, as
// a parent has over its child (or root over any process).
func shutdownConnectionsTo(pid, port int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return 0, nil // gone, and its sockets with it
	}
	if err != nil {
		return 0, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list sockets of %d: %w", pid, err)
	}
	shut := 0
	for _, f := range fds {
		target, err := os.Readlink(dir + "/" + f.Name())
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue // closed meanwhile, or no socket
		}
		fd, err := strconv.Atoi(f.Name())
		if err != nil {
			continue
		}
		dup, err := unix.PidfdGetfd(pidfd, fd, 0)
		if errors.Is(err, unix.EBADF) {
			continue // closed meanwhile
		}
		if err != nil {
			return shut, fmt.Errorf("pidfd_getfd %d of %d (needs ptrace rights over it): %w", fd, pid, err)
		}
		if peerPort(dup) == port {
			if err := unix.Shutdown(dup, unix.SHUT_RDWR); err == nil {
				shut++
			}
		}
		unix.Close(dup)
	}
	return shut, nil
}

// peerPort is the port a connected TCP socket's far end has, or 0.
func peerPort(fd int) int {
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return 0 // a listener, or not connected
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return sa.Port
	case *unix.SockaddrInet6:
		return sa.Port
	}
	return 0
}
