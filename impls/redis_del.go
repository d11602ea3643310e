package impls

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Design{
		Name: "redis-del",
		Description: "redis-single but released with a plain DEL, no owner check (sources S2, S3): the control " +
			"that must fail, a late holder deletes the next holder's lock",
		Binaries:   map[string]string{"redis-server": "redis-server"},
		Roles:      lockRoles(1),
		Deploy:     deployRedis(1),
		PlainNodes: true,
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, nodeClient(cfg), singleOpts{release: plainDel}), nil
		},
	})
}

// plainDel deletes the key whoever holds it: 1 if a key was deleted.
func plainDel(ctx context.Context, rdb redis.UniversalClient, key, _ string) (int64, error) {
	return rdb.Del(ctx, key).Result()
}
