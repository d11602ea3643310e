package faults

import "fmt"

// ServerFree is implemented by faults that act on no server process: they
// stop, kill or skew clients, or act on links. They run against servers
// the user runs (--servers) exactly as against locktest's own.
//
// A fault that says neither this nor SignalsServers is taken to need
// servers locktest started (to kill, restart, re-clock or fail them over)
// and is refused with --servers: a new fault never touches a user's
// server in a way nobody checked.
type ServerFree interface {
	ServerFree()
}

// ServerSignals is implemented by faults whose one act on servers is to
// stop and continue their processes (SIGSTOP, SIGCONT). With --servers
// they need the servers' pids (--server-pids).
type ServerSignals interface {
	SignalsServers()
}

// CheckUserServers says why f cannot run against servers the user runs,
// or nil; pids tells whether their pids were given.
func CheckUserServers(f Fault, pids bool) error {
	switch f.(type) {
	case ServerFree:
		return nil
	case ServerSignals:
		if !pids {
			return fmt.Errorf("fault %s stops server processes (SIGSTOP): give your servers' pids with --server-pids, in --servers order", f.Name())
		}
		return nil
	}
	return fmt.Errorf("fault %s needs servers locktest starts (%s), and locktest never kills, restarts, re-clocks or reconfigures servers you run (--servers)",
		f.Name(), f.Description())
}
