// Package cluster starts and stops the real server processes of a run
// (redis-server and friends) and the worker processes, each in its own
// process group with a parent-death signal, so that nothing outlives the
// coordinator: not on a normal end, an error, Ctrl-C, or a SIGKILL. What
// leaves its group and session is found as the coordinator's or a worker's
// orphan (they are subreapers), and, where a cgroup can be made
// (ConfineRun), is in the run's cgroup, which a guard kills once the
// coordinator is gone however it ended.
//
// A Process can be paused (SIGSTOP, like a stop-the-world GC pause),
// continued and killed; a paused process is continued before it is killed.
// Every path a client or replica dials goes through its own Link (an
// embedded toxiproxy proxy), and servers started under the clock shim have
// a Clock the coordinator can move: the handles the faults act on. In a
// lab (--network netns, lab.go) each server and client has a network
// namespace of its own instead, and a Link's effects are firewall rules
// the kernel applies to packets (firewall.go).
//
// A Backend decides where servers run: local processes (the default), or
// a backend another package registers (RegisterBackend): cluster/container
// runs them in containers or in the slots of a docker-compose topology, and
// keeps the Docker client libraries out of this package. Faults see an
// Instance either way.
//
// Servers the user runs (--servers) join a cluster as nodes too (Adopt):
// reached through links and paused by pid like the cluster's own, but
// never started, killed or restarted, and continued on every exit path,
// by a guard that outlives a killed coordinator if need be.
package cluster
