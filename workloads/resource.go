package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktest/locktest/lock"
)

// Store is the protected data a workload reads and writes under the lock:
// the Resource node, or the lock service itself for designs that guard
// their own writes (lock.GuardedStore).
type Store interface {
	Read(ctx context.Context, key string, token int64) (int64, error)
	Write(ctx context.Context, key string, v, token int64) error
}

// Resource is the protected data: a counter per lock key on its own Redis
// node. With a token it behaves as Kleppmann's fenced storage: it remembers
// the highest token it has seen, on reads as well as writes, and refuses
// anything older. Fencing reads too closes the gap where a stale holder
// reads, the next holder reads the same value, and the stale write lands
// before the new holder's first write.
type Resource struct {
	rdb *redis.Client
}

// resourceScript reads (ARGV[2] == "") or writes the counter under KEYS[1],
// fenced by token ARGV[1] against the maximum in KEYS[2] when ARGV[1] > 0.
// Returns {accepted, value}.
var resourceScript = redis.NewScript(`
local t = tonumber(ARGV[1])
if t > 0 then
  local max = tonumber(redis.call('GET', KEYS[2]) or '0')
  if t < max then return {0, 0} end
  if t > max then redis.call('SET', KEYS[2], ARGV[1]) end
end
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[1], ARGV[2])
  return {1, tonumber(ARGV[2])}
end
return {1, tonumber(redis.call('GET', KEYS[1]) or '0')}`)

// NewResource connects to the resource node at addr.
func NewResource(addr string, ioTimeout time.Duration) *Resource {
	return &Resource{rdb: redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: ioTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		MaxRetries: -1, PoolSize: 2, DisableIdentity: true,
	})}
}

// Read returns the counter for key. token 0 means unfenced.
func (r *Resource) Read(ctx context.Context, key string, token int64) (int64, error) {
	return r.run(ctx, key, token, "")
}

// Write sets the counter for key to v, fenced by token when it is > 0.
func (r *Resource) Write(ctx context.Context, key string, v, token int64) error {
	_, err := r.run(ctx, key, token, fmt.Sprint(v))
	return err
}

func (r *Resource) run(ctx context.Context, key string, token int64, value string) (int64, error) {
	res, err := resourceScript.Run(ctx, r.rdb, []string{"counter:" + key, "maxtoken:" + key}, token, value).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("resource: %w", err)
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("resource: unexpected reply %v", res)
	}
	if res[0] == 0 {
		return 0, lock.ErrStale
	}
	return res[1], nil
}

// Close closes the connection.
func (r *Resource) Close() error { return r.rdb.Close() }
