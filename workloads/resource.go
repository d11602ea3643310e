package workloads

import (
	"context"
	"fmt"
	"slices"
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

// The resource's fencing: which of its operations check the token
// (Config.Fencing, locktest run --fencing). Both refuse a write whose
// token is older than the newest they have seen, and accept an equal one;
// a refused operation wrote nothing (lock.ErrStale, a definite failure).
// They differ in whether a read counts.
const (
	// FenceWrites is the storage Kleppmann describes: a write with a token
	// older than the newest token of an accepted write is refused; reads
	// are not checked and leave no mark. That keeps a stale holder from
	// overwriting a newer holder's write, and no more. A read-modify-write
	// across holders (the counter: read v, write v+1) is safe only if its
	// write is conditional on what it read, and the counter's is not:
	//
	//   - with tokens in order, a stale holder paused after reading v can
	//     still write v+1 after the next holder read v and before that
	//     holder's first write, which then writes v+1 again: an update is
	//     lost, though every token came in order;
	//   - with tokens out of order (the client that took the lock first
	//     gets the newer token, as tests/protocol/zoo.py token-after
	//     does), both read v, and the stale holder's write lands over the
	//     rightful holder's v+1, or comes first and has the rightful
	//     holder's write refused.
	FenceWrites = "writes"
	// FenceReadsWrites also registers the token of every read and refuses
	// a read older than the newest token seen. Then every operation the
	// resource accepts carries a token no older than any it accepted
	// before, so between the accepted read and the accepted write of one
	// critical section no operation with another token was accepted: each
	// accepted read-modify-write is atomic, in whatever order the lock
	// handed its tokens out. Tokens out of order show as refused critical
	// sections and in the mutex check, never as a lost update; only a
	// token handed out twice (a counter rolled back) lets two sections
	// interleave. It is the default, as the resource always was: the
	// catalogue's fenced designs are safe under it, while under
	// FenceWrites a holder paused or delayed into the next holder's
	// critical section loses updates on any of them (docs/anomalies.md).
	FenceReadsWrites = "reads-writes"
)

// FencingModes lists the resource's fencing settings, the default first.
var FencingModes = []string{FenceReadsWrites, FenceWrites}

// CheckFencing says whether mode is one of FencingModes.
func CheckFencing(mode string) error {
	if !slices.Contains(FencingModes, mode) {
		return fmt.Errorf("%q is not a fencing mode: give %s (every read and write checked) or %s (writes only)",
			mode, FenceReadsWrites, FenceWrites)
	}
	return nil
}

// Resource is the protected data: a counter per lock key on its own Redis
// node. With a token it behaves as fenced storage: it remembers the highest
// token it has seen and refuses anything older, on writes and, unless its
// fencing is FenceWrites, on reads.
type Resource struct {
	rdb        *redis.Client
	fenceReads bool
}

// resourceScript reads (ARGV[2] == "") or writes the counter under KEYS[1],
// fenced by token ARGV[1] against the maximum in KEYS[2] when ARGV[1] > 0;
// a read is fenced only when ARGV[3] == "1". Returns {accepted, value}.
var resourceScript = redis.NewScript(`
local t = tonumber(ARGV[1])
local write = ARGV[2] ~= ''
if t > 0 and (write or ARGV[3] == '1') then
  local max = tonumber(redis.call('GET', KEYS[2]) or '0')
  if t < max then return {0, 0} end
  if t > max then redis.call('SET', KEYS[2], ARGV[1]) end
end
if write then
  redis.call('SET', KEYS[1], ARGV[2])
  return {1, tonumber(ARGV[2])}
end
return {1, tonumber(redis.call('GET', KEYS[1]) or '0')}`)

// NewResource connects to the resource node at addr, fencing as fencing
// says (one of FencingModes).
func NewResource(addr string, ioTimeout time.Duration, fencing string) *Resource {
	return &Resource{rdb: redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: ioTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		MaxRetries: -1, PoolSize: 2, DisableIdentity: true,
	}), fenceReads: fencing != FenceWrites}
}

// Read returns the counter for key. token 0 means unfenced; so does any
// token under FenceWrites.
func (r *Resource) Read(ctx context.Context, key string, token int64) (int64, error) {
	return r.run(ctx, key, token, "")
}

// Write sets the counter for key to v, fenced by token when it is > 0.
func (r *Resource) Write(ctx context.Context, key string, v, token int64) error {
	_, err := r.run(ctx, key, token, fmt.Sprint(v))
	return err
}

func (r *Resource) run(ctx context.Context, key string, token int64, value string) (int64, error) {
	fenceRead := "0"
	if r.fenceReads {
		fenceRead = "1"
	}
	res, err := resourceScript.Run(ctx, r.rdb, []string{"counter:" + key, "maxtoken:" + key}, token, value, fenceRead).Int64Slice()
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
