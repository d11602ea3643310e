package faults

import "fmt"

// CheckUserServers says why f cannot run against servers the user runs,
// or nil; pids tells whether their pids were given.
func CheckUserServers(f Fault, pids bool) error {
	switch f.Traits().Servers {
	case ServersUntouched:
		return nil
	case ServersSignalled:
		if !pids {
			return fmt.Errorf("fault %s stops server processes (SIGSTOP): give your servers' pids with --server-pids, in --servers order", f.Name())
		}
		return nil
	}
	return fmt.Errorf("fault %s needs servers locktest starts (%s), and locktest never kills, restarts, re-clocks or reconfigures servers you run (--servers)",
		f.Name(), f.Description())
}
