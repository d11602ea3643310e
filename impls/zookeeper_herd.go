package impls

import "github.com/locktest/locktest/lock"

func init() {
	Register(Design{
		Name: "zookeeper-herd",
		Description: "zookeeper with the naive wait of source S3: every waiter watches the lock's whole child list " +
			"and re-reads it on each change (the herd effect: load grows with the waiters)",
		Binaries: zooKeeperBinaries,
		Roles:    zooKeeperRoles,
		Deploy:   deployZooKeeper,
		New:      func(cfg lock.Config) (lock.Lock, error) { return newZooKeeper(cfg, zkOpts{herd: true}), nil },
	})
}
