package runner

import (
	"math"
	"os"
	"runtime/debug"

	"github.com/locktest/locktest/history"
)

// heapPerHistoryByte is the heap analyze may use per byte of
// history.jsonl: it holds about 2.8 (0.6 GB for a 220 MB, million-op
// history), and the rest is the collector's headroom.
const heapPerHistoryByte = 4

// minHeapLimit is the least soft limit limitHeap sets.
const minHeapLimit = 256 << 20

// streamGCPercent and streamHeapLimit tune the collector while a history
// is checked as it is read: what is live then is small (tens of MB) and
// does not grow with the history, and letting garbage grow to four times
// it, up to a soft 200 MiB, spends a fifth less time collecting (a 1M-op
// history: 6.2 → 4.8 s, 130 → 220 MB peak, on a loaded 2-core machine).
const (
	streamGCPercent = 400
	streamHeapLimit = 200 << 20
)

// limitHeap sets the garbage collector for the check of the history at
// path (and the report drawn from it, with report), and returns what
// restores it. Read whole, it bounds the collector's headroom: by default
// the heap may grow to twice what is live, which for a long history is
// gigabytes of garbage; a soft limit of heapPerHistoryByte times the
// history (at least minHeapLimit) keeps it under one and a half times. It
// is soft: a history that needs more gets it, at the cost of more
// collections. Streamed, it collects less often (streamGCPercent). A
// limit or a GOGC the user set stands.
func limitHeap(path string, report bool) (restore func()) {
	prev := debug.SetMemoryLimit(-1)
	size, err := history.Size(path)
	if prev != math.MaxInt64 || err != nil {
		return func() {}
	}
	if drawnWhole(size, report) {
		debug.SetMemoryLimit(max(minHeapLimit, int64(heapPerHistoryByte*float64(size))))
		return func() { debug.SetMemoryLimit(prev) }
	}
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prevGC := debug.SetGCPercent(streamGCPercent)
	debug.SetMemoryLimit(streamHeapLimit)
	return func() { debug.SetGCPercent(prevGC); debug.SetMemoryLimit(prev) }
}
