package runner

import (
	"math"
	"runtime/debug"

	"github.com/locktest/locktest/history"
)

// heapPerHistoryByte is the heap analyze may use per byte of
// history.jsonl: it holds about 2.8 (0.6 GB for a 220 MB, million-op
// history), and the rest is the collector's headroom.
const heapPerHistoryByte = 4

// minHeapLimit is the least soft limit limitHeap sets.
const minHeapLimit = 256 << 20

// limitHeap bounds the garbage collector's headroom while the history at
// path is checked whole. By default the heap may grow to twice what is
// live, which for a long history is gigabytes of garbage; a soft limit of
// heapPerHistoryByte times the history (at least minHeapLimit) keeps it
// under one and a half times. It is soft: a history that needs more gets
// it, at the cost of more collections. A limit the user set (GOMEMLIMIT)
// stands. The returned function restores the previous limit.
func limitHeap(path string) (restore func()) {
	prev := debug.SetMemoryLimit(-1)
	size, err := history.Size(path)
	if prev != math.MaxInt64 || err != nil {
		return func() {}
	}
	debug.SetMemoryLimit(max(minHeapLimit, int64(heapPerHistoryByte*float64(size))))
	return func() { debug.SetMemoryLimit(prev) }
}
