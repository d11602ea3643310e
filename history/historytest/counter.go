// Package historytest writes synthetic counter histories, shaped like the
// counter workload's, so that the checker and the reports can be tested and
// benchmarked at sizes no short live run reaches, without any server.
package historytest

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"

	"github.com/locktest/locktest/history"
)

// Counter describes a history of the counter workload: each client loops
// acquire (waiting while another client holds the key), one critical
// section (read v, write v+1), release; at the end the coordinator reads
// every key. Without anomalies the history is valid: holds of one key never
// overlap and every increment reads the value the previous one wrote.
type Counter struct {
	Clients int
	Keys    int
	// Ops is the number of client operations (acquire, incr, release); the
	// history has about twice as many records.
	Ops  int
	Seed uint64
	// Overlaps is how many acquires are granted while another client still
	// holds the key (as when a paused holder's lease ran out): both
	// critical sections read the same value and one update is lost.
	Overlaps int
	// Unknowns is how many critical sections end info (the write's outcome
	// is unknown); every other one of them really landed.
	Unknowns int
	// UnknownReleases is how many releases end info (a timeout); the lock
	// was in fact released.
	UnknownReleases int
}

// Timing, in nanoseconds: short, so that the history spans seconds, not
// hours; the checker only looks at order.
const (
	t0      = int64(1_000_000_000_000)
	latency = int64(200_000)   // a store round trip, up to twice this
	holdMin = int64(1_000_000) // time inside the critical section
	holdMax = int64(3_000_000)
)

// client is one worker's place in the simulation: when it starts its next
// cycle.
type client struct {
	id   int
	next int64
	seq  int
}

type clients []*client

func (c clients) Len() int { return len(c) }
func (c clients) Less(i, j int) bool {
	return c[i].next < c[j].next || c[i].next == c[j].next && c[i].id < c[j].id
}
func (c clients) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *clients) Push(x any)   { *c = append(*c, x.(*client)) }
func (c *clients) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// Records returns the history, in time order with indexes assigned, as a
// live run records it.
func (g Counter) Records() []history.Record {
	rng := rand.New(rand.NewPCG(g.Seed, 0x10c4))
	keys := max(g.Keys, 1)
	cycles := max(g.Ops/3, 1)
	// Pick which cycles carry each anomaly, evenly spread and apart.
	overlapAt := spread(cycles, g.Overlaps, 0)
	unknownAt := spread(cycles, g.Unknowns, 1)
	unknownRelAt := spread(cycles, g.UnknownReleases, 2)

	free := make([]int64, keys)  // when each key's lock is next free
	value := make([]int64, keys) // the counter of each key
	lastRead := make([]int64, keys)
	recs := make([]history.Record, 0, 2*cycles*3+2*keys)
	emit := func(c *client, f, key string, call, ret int64, outcome history.Type, val *int64) {
		c.seq++
		inv := history.Record{Process: c.id, Seq: c.seq, Type: history.Invoke, F: f, Key: key, Time: call}
		done := inv
		done.Type, done.Time, done.Value = outcome, ret, val
		if f == history.FAcquire || f == history.FRelease {
			done.Cmds = 1
		}
		recs = append(recs, inv, done)
	}
	var q clients
	for i := range max(g.Clients, 1) {
		q = append(q, &client{id: i, next: t0 + rng.Int64N(latency)})
	}
	heap.Init(&q)
	pendingOverlap := false
	unknowns := 0
	for cycle := range cycles {
		c := q[0]
		k := rng.IntN(keys)
		key := fmt.Sprintf("lock-%d", k)
		lat := func() int64 { return latency + rng.Int64N(latency) }
		call := c.next
		pendingOverlap = pendingOverlap || overlapAt[cycle]
		overlap := pendingOverlap && free[k] > call
		var granted int64
		var read int64
		if overlap {
			// The previous holder's lease ran out under it: this client
			// gets the lock at once and reads what the holder read.
			pendingOverlap = false
			granted = call + lat()
			read = lastRead[k]
		} else {
			granted = max(call, free[k]) + lat()
			read = value[k]
			value[k]++
		}
		emit(c, history.FAcquire, key, call, granted, history.OK, nil)
		inCall := granted + rng.Int64N(latency)
		inRet := inCall + holdMin + rng.Int64N(holdMax-holdMin)
		outcome := history.OK
		if unknownAt[cycle] {
			outcome = history.Info
			unknowns++
			if unknowns%2 == 0 && !overlap {
				value[k]-- // the write never landed
			}
		}
		emit(c, history.FIncr, key, inCall, inRet, outcome, history.Int64(read))
		lastRead[k] = read
		relCall := inRet + rng.Int64N(latency)
		relRet := relCall + lat()
		relOutcome := history.OK
		if unknownRelAt[cycle] {
			relOutcome = history.Info
		}
		emit(c, history.FRelease, key, relCall, relRet, relOutcome, nil)
		free[k] = max(free[k], relRet)
		c.next = relRet + rng.Int64N(latency)
		heap.Fix(&q, 0)
	}
	var end int64
	for _, r := range recs {
		end = max(end, r.Time)
	}
	coord := &client{id: history.NemesisProcess}
	for k := range keys {
		call := end + int64(k+1)*latency
		emit(coord, history.FRead, fmt.Sprintf("lock-%d", k), call, call+latency/2, history.OK, history.Int64(value[k]))
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time < recs[j].Time })
	for i := range recs {
		recs[i].Index = i
	}
	return recs
}

// spread marks n of cycles, evenly spaced, shifted by phase so that
// different anomalies fall on different cycles.
func spread(cycles, n, phase int) map[int]bool {
	at := map[int]bool{}
	for i := range n {
		at[min(cycles-1, (2*i+1)*cycles/(2*n)+phase)] = true
	}
	return at
}

// Write writes the history as history.jsonl lines.
func (g Counter) Write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	for _, r := range g.Records() {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write synthetic history: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write synthetic history: %w", err)
	}
	return nil
}
