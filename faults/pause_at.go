package faults

// pause-at freezes a client at a checkpoint of the run's choosing
// (--checkpoint), for the fault duration: any point its design lists,
// among them those an exec program announces between two of its round
// trips (--exec-checkpoints, docs/protocol.md). A lock whose safety rests
// on two steps being one, such as a fencing token fetched after the lock
// was taken, shows what a pause between them does.
func init() {
	Register(&pauseAt{name: "pause-at", designs: "exec with --exec-checkpoints, redlock, redlock-noelapsed, redsync, etcd, etcd-fenced, etcd-txn",
		desc: "SIGSTOP a client at the checkpoint named by --checkpoint (default: the design's first), for the fault duration",
		// The points are the client's own: whether its lease is whole
		// there is not known, so warn only where no lease can run out.
		warn: warnPause("pause-at", false)})
}
