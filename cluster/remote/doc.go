// Package remote runs a cluster's servers on other hosts, reached over
// SSH as Jepsen's control node reaches its database nodes: the "ssh"
// backend (--nodes host1,host2,…). Designs and faults see a Node and an
// Instance as on any backend; what a run does on a host is a shell command
// over the host's SSH connection (mkdir, cat > file, setsid …, kill).
//
// Why a journal. A coordinator killed with SIGKILL cannot stop what it
// started on other machines, and nothing there dies with it (no
// parent-death signal crosses a network). So every act on a host that
// needs undoing (a directory made, a server started) is appended to the
// run directory's undo list before the run goes on, and its undoing after;
// `locktest heal --nodes …` reads the list and undoes what is left. A
// normal end, an error or Ctrl-C undo everything themselves.
//
// Time. Histories are stamped on the control host; the servers' clocks
// are the hosts'. Offsets measures each host's offset to the control
// host as NTP does, over the SSH connection, with its uncertainty, so a
// run can record what it may not assume: that the clocks agree.
//
// It stands apart from cluster so that the SSH libraries are compiled
// only into what offers --nodes (cli, runner, cmd/locktest).
package remote
