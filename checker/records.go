package checker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/locktest/locktest/history"
)

// ErrOutOfOrder says a record came too late after records timed well after
// it for a Checker to place it: the history is to be checked whole (Check).
var ErrOutOfOrder = errors.New("history records out of time order")

// Checker checks a history record by record, as Check checks it whole,
// holding the ops in flight and each key's open segment instead of the
// history: a night's run is checked in about the memory a minute's takes.
// Its Report has Check's verdicts, op counts, notes, visualizations,
// stats and faults; the explanations (violations, efficacy, lease) are
// left out, for an Explainer to add on a second reading of the stretches
// of the history they need. Metrics gives Measure's metrics of it.
//
// The cutters need each key's ops in call order, and a record is appended
// somewhat after it was timed: an op is handed on once it has ended and
// the history has gone history.AppendSkew past its call. A record that
// comes later than that cannot be placed, and Add returns ErrOutOfOrder.
type Checker struct {
	opt    Options
	stream *stream
	pairs  history.Pairing
	faults history.FaultLog
	queues map[queueKey]*opQueue
	stats  ResourceStats
	meter  Meter
	// recoveries measures the faults' recoveries, on the way too.
	recoveries RecoveryMeter
	reach      reach
	// last is the op that ends the history (the latest call or
	// completion), whose end a hold never released lasts to.
	last   *history.Op
	lastAt int64
	// start and latest are the earliest and latest times so far.
	start, latest int64
	records       int
	err           error
	// The ops handed on are cut into segments on a goroutine of their own
	// (cutOps), in batches: reading the history, pairing and ordering its
	// ops, and cutting them take about as long each, and go side by side.
	batch []*history.Op
	cuts  chan []*history.Op
	cut   chan struct{} // closed when every batch is cut
}

// queueKey names the ops of one key in one model.
type queueKey struct {
	key  string
	lock bool
}

// opQueue holds one key's ops of one model that are not handed on yet, in
// call order (ties in the order they came, as Ops sorts them).
type opQueue struct {
	ops  []*history.Op
	head int
	// last is the call of the latest op handed on; handed says one was.
	last   int64
	handed bool
}

// NewChecker starts a check; opt.Timeout counts from now.
func NewChecker(opt Options) *Checker {
	opt = withDefaults(opt)
	c := &Checker{opt: opt, stream: newStream(opt), queues: map[queueKey]*opQueue{}, start: history.Never,
		cuts: make(chan []*history.Op, 4), cut: make(chan struct{})}
	go c.cutOps()
	return c
}

// cutOps hands the batches of ops on to the stream, in order.
func (c *Checker) cutOps() {
	defer close(c.cut)
	for b := range c.cuts {
		for _, op := range b {
			c.stream.add(op)
		}
	}
}

// send sends the batch of ops handed on to be cut.
func (c *Checker) send() {
	if len(c.batch) > 0 {
		c.cuts <- c.batch
		c.batch = make([]*history.Op, 0, cap(c.batch))
	}
}

// handEvery is how many records go by between two looks for ops to hand
// on: often enough to hold few, rarely enough to cost nothing.
const handEvery = 256

// Add takes the next record of the history.
func (c *Checker) Add(r *history.Record) error {
	if c.err != nil {
		return c.err
	}
	c.start, c.latest = min(c.start, r.Time), max(c.latest, r.Time)
	c.faults.Add(r)
	if r.Type == history.FaultStart {
		c.recoveries.AddFault(history.Fault{Name: r.Fault, Target: r.Target, Start: r.Time})
	}
	c.reach.record(r)
	begun, ended := c.pairs.Add(r)
	if begun != nil {
		if begun.Call > c.lastAt {
			c.last, c.lastAt = begun, begun.Call
		}
		c.reach.begun(begun)
		c.begin(begun)
	}
	if ended != nil {
		if ended.Completed != history.Never && ended.Completed > c.lastAt {
			c.last, c.lastAt = ended, ended.Completed
		}
		c.reach.ended(ended)
		c.meter.Add(ended)
		// Ops come as they end, each within AppendSkew of the latest
		// time, and so do the faults' starts.
		c.recoveries.Add(ended, c.latest-int64(history.AppendSkew))
	}
	if c.records++; c.records%handEvery == 0 {
		c.hand(c.latest - int64(history.AppendSkew))
	}
	return c.err
}

// begin queues an op that began, behind the ops of its key called by then.
func (c *Checker) begin(op *history.Op) {
	var k queueKey
	switch op.F {
	case history.FAcquire, history.FRelease, history.FCrash:
		k = queueKey{op.Key, true}
	case history.FIncr, history.FRead:
		k = queueKey{op.Key, false}
	default:
		c.batch = append(c.batch, op) // in neither model, whatever its outcome
		return
	}
	q, ok := c.queues[k]
	if !ok {
		q = &opQueue{}
		c.queues[k] = q
	}
	if q.handed && op.Call < q.last {
		c.err = fmt.Errorf("%w: record %d (c%d %s %q) is timed %s before an op handed on %s after it", ErrOutOfOrder,
			op.InvokeIndex, op.Process, op.F, op.Key, time.Duration(q.last-op.Call), history.AppendSkew)
		return
	}
	i := len(q.ops)
	for i > q.head && q.ops[i-1].Call > op.Call {
		i--
	}
	q.ops = append(q.ops, nil)
	copy(q.ops[i+1:], q.ops[i:])
	q.ops[i] = op
}

// hand hands on, per key and model, the ops called before t that have
// ended, up to the first that has not.
func (c *Checker) hand(t int64) {
	for _, q := range c.queues {
		for ; q.head < len(q.ops); q.head++ {
			op := q.ops[q.head]
			if op.Call >= t || c.pairs.Open(op) {
				break
			}
			q.ops[q.head] = nil
			q.last, q.handed = op.Call, true
			c.stats.add(op)
			c.batch = append(c.batch, op)
		}
		if q.head > 1024 && 2*q.head > len(q.ops) {
			q.ops, q.head = shift(q.ops, 0, q.head), 0
		}
	}
	c.send()
}

// Violated hands on the ops that can be, and reports which checks found a
// violation in the segments decided so far. It is final: the ops of a
// segment handed on have ended and are placed, and what comes after them
// only adds constraints. A run that stops at its first violation watches
// it (--stop-on-violation); segments are decided on workers, so a
// violation handed on now is seen by a later call.
func (c *Checker) Violated() (mutex, resource bool) {
	if c.err == nil {
		c.hand(c.latest - int64(history.AppendSkew))
	}
	return c.stream.mutex.invalid(), c.stream.resource.invalid()
}

// Report ends the check: the history ended with the last record added.
// It must be called, after an error too (the check's workers stop then),
// and only once; after an error its verdicts mean nothing.
func (c *Checker) Report() Report {
	for _, op := range c.pairs.End() {
		c.meter.Add(op)
	}
	c.hand(math.MaxInt64)
	close(c.cuts)
	<-c.cut
	start := c.start
	if start == history.Never {
		start = 0
	}
	rep := Report{Faults: c.faults.Faults(), Start: start, Stats: c.stats.settled()}
	rep.Mutex, rep.Resource = c.stream.finish(start, c.opt.Timeout)
	return rep
}

// CheckFile checks the history at path record by record (see Checker),
// reading one record at a time: the memory a check takes is what is in
// flight, not the history's length. A cut-off last line is left out and
// reported as ReadFile does (history.ErrTruncated, with the report of the
// rest); a record out of order ends the check with ErrOutOfOrder, and a
// damaged one (history.Validate) with its error.
func CheckFile(path string, opt Options) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("check history: %w", err)
	}
	defer f.Close()
	c := NewChecker(opt)
	var v history.Validator
	err = history.Each(f, func(r *history.Record, _ int64) error {
		if err := v.Add(r); err != nil {
			return err
		}
		return c.Add(r)
	})
	rep := c.Report()
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return rep, fmt.Errorf("check %s: %w", path, err)
	}
	return rep, err
}
