package faults

import "github.com/locktest/locktest/lock"

// pause-waiter freezes a client queued for a lock another client holds,
// for the fault duration (> TTL): its session expires while it waits, and
// when it runs again the lock must not be granted to it (etcd #11456,
// #9921; docs/anomalies.md row 15). A grant would give it the lock while the next
// holder has it too, which the mutual-exclusion check sees.
func init() {
	Register(&pauseAt{name: "pause-waiter", point: lock.CheckpointWaiting, designs: "etcd, etcd-fenced, etcd-txn",
		desc: "SIGSTOP a client waiting in acquire for a held lock, for the fault duration (> TTL), so its session expires",
		warn: warnPause("pause-waiter", false)})
}
