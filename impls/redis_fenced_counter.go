package impls

import "github.com/locktest/locktest/lock"

func init() {
	Register(Design{
		Name: "redis-fenced-counter",
		Description: "redis-replicated plus a fencing token from INCR on the same primary: a failover can roll " +
			"the counter back and hand out a token twice (Kleppmann)",
		Fenced:   true,
		Roles:    sentinelRoles,
		Binaries: sentinelBinaries,
		Deploy:   deployReplicated,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, failoverClient(cfg), singleOpts{fenced: true}), nil
		},
	})
}
