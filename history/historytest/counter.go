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
	// LateOverlap grants one more acquire while another client holds the
	// key, in the last thousandth of the cycles: a lost update near the end
	// of a long run, which a check that gave up early would miss.
	LateOverlap bool
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
	// Two records per op, three ops per cycle, a final read per key.
	recs := make([]history.Record, 0, 2*3*max(g.Ops/3, 1)+2*max(g.Keys, 1))
	g.each(func(r history.Record) error {
		recs = append(recs, r)
		return nil
	})
	return recs
}

// pending is a record generated ahead of time: a cycle's records are made
// at its start and handed on once no later cycle can record anything
// earlier. order breaks ties of time in the order they were made.
type pending struct {
	rec   history.Record
	order int
}

type pendings []pending

func (p pendings) Len() int { return len(p) }
func (p pendings) Less(i, j int) bool {
	return p[i].rec.Time < p[j].rec.Time || p[i].rec.Time == p[j].rec.Time && p[i].order < p[j].order
}
func (p pendings) Swap(i, j int) { p[i], p[j] = p[j], p[i] }
func (p *pendings) Push(x any)   { *p = append(*p, x.(pending)) }
func (p *pendings) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}

// each hands the history's records to emit in time order, indexes
// assigned, holding only the cycles in flight: a history of ten million
// operations is written without being kept.
func (g Counter) each(emit func(history.Record) error) error {
	rng := rand.New(rand.NewPCG(g.Seed, 0x10c4))
	keys := max(g.Keys, 1)
	cycles := max(g.Ops/3, 1)
	// Pick which cycles carry each anomaly, evenly spread and apart.
	overlapAt := spread(cycles, g.Overlaps, 0)
	unknownAt := spread(cycles, g.Unknowns, 1)
	unknownRelAt := spread(cycles, g.UnknownReleases, 2)
	if g.LateOverlap {
		overlapAt[cycles-max(cycles/1000, 1)] = true
	}

	free := make([]int64, keys)  // when each key's lock is next free
	value := make([]int64, keys) // the counter of each key
	lastRead := make([]int64, keys)
	names := make([]string, keys)
	for k := range names {
		names[k] = fmt.Sprintf("lock-%d", k)
	}
	var ahead pendings
	made, index := 0, 0
	var end int64
	// flush hands on the records timed before t.
	flush := func(t int64) error {
		for len(ahead) > 0 && ahead[0].rec.Time < t {
			r := heap.Pop(&ahead).(pending).rec
			r.Index = index
			index++
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
	record := func(c *client, f, key string, call, ret int64, outcome history.Type, val *int64) {
		c.seq++
		inv := history.Record{Process: c.id, Seq: c.seq, Type: history.Invoke, F: f, Key: key, Time: call}
		done := inv
		done.Type, done.Time, done.Value = outcome, ret, val
		if f == history.FAcquire || f == history.FRelease {
			done.Cmds = 1
		}
		heap.Push(&ahead, pending{inv, made})
		heap.Push(&ahead, pending{done, made + 1})
		made += 2
		end = max(end, ret)
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
		// Every later cycle starts at or after c.next.
		if err := flush(c.next); err != nil {
			return err
		}
		k := rng.IntN(keys)
		key := names[k]
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
		record(c, history.FAcquire, key, call, granted, history.OK, nil)
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
		record(c, history.FIncr, key, inCall, inRet, outcome, history.Int64(read))
		lastRead[k] = read
		relCall := inRet + rng.Int64N(latency)
		relRet := relCall + lat()
		relOutcome := history.OK
		if unknownRelAt[cycle] {
			relOutcome = history.Info
		}
		record(c, history.FRelease, key, relCall, relRet, relOutcome, nil)
		free[k] = max(free[k], relRet)
		c.next = relRet + rng.Int64N(latency)
		heap.Fix(&q, 0)
	}
	coord := &client{id: history.NemesisProcess}
	last := end
	for k := range keys {
		call := last + int64(k+1)*latency
		record(coord, history.FRead, names[k], call, call+latency/2, history.OK, history.Int64(value[k]))
	}
	return flush(history.Never)
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

// Write writes the history as history.jsonl lines, as it is generated.
func (g Counter) Write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	err := g.each(func(r history.Record) error { return enc.Encode(r) })
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("write synthetic history: %w", err)
	}
	return nil
}
