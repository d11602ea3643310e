package impls

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Design{
		Name: "redis-lockdelay",
		Description: "Chubby's lock-delay on one Redis node (source S4): a lease that expired instead of being " +
			"released keeps the lock unavailable for a further delay (= TTL)",
		Binaries:   map[string]string{"redis-server": "redis-server"},
		Roles:      lockRoles(1),
		Deploy:     deployRedis(1),
		PlainNodes: true,
		LockDelay:  1, // the key lives 2×TTL: the lease, then the delay
		New: func(cfg lock.Config) (lock.Lock, error) {
			return newRedisSingle(cfg, nodeClient(cfg), singleOpts{acquire: delayAcquire, release: delayRelease}), nil
		},
	})
}

// The lock key holds "owner|lease end" (server time, ms) and lives for
// TTL + delay. Until the lease end the owner holds it; after that nobody
// does, but the key stays until the delay has passed, so late requests of
// a holder that vanished cannot meet a new holder. Only a release before
// the lease end deletes it early. The delay equals the TTL.
const delayLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('GET', KEYS[1])
local mine = false
if v then
  local sep = string.find(v, '|', 1, true)
  mine = string.sub(v, 1, sep - 1) == ARGV[1] and now < tonumber(string.sub(v, sep + 1))
end
`

// delayAcquire takes a free lock, or finds it already ours (a lost reply).
var delayAcquireScript = redis.NewScript(delayLua + `
if not v then
  local ttl = tonumber(ARGV[2])
  redis.call('SET', KEYS[1], ARGV[1] .. '|' .. (now + ttl), 'PX', 2 * ttl)
  return 1
end
if mine then return 1 end
return 0`)

// delayReleaseScript deletes the lock only while our lease runs: an
// expired lease leaves the lock-delay in place.
var delayReleaseScript = redis.NewScript(delayLua + `
if mine then return redis.call('DEL', KEYS[1]) end
return 0`)

func delayAcquire(ctx context.Context, rdb redis.UniversalClient, key, owner string, cfg lock.Config, _ bool) (int64, error) {
	return delayAcquireScript.Run(ctx, rdb, []string{key}, owner, cfg.TTL.Milliseconds()).Int64()
}

func delayRelease(ctx context.Context, rdb redis.UniversalClient, key, owner string) (int64, error) {
	return delayReleaseScript.Run(ctx, rdb, []string{key}, owner).Int64()
}
