package checker

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// A check streams: ops are handed to it one by one, in call order, and
// each key's cutter hands on a segment as soon as its cut is certain.
// Workers decide the segments as they come (a sweep where it decides,
// porcupine otherwise), and a decided segment is dropped unless the
// visualization may draw it. What the check holds is the open segment of
// each key and the segments in the workers' hands, not the history.

// stream checks both models over the ops added to it.
type stream struct {
	mutex, resource *modelCheck
	procs           map[int]bool // every op's process, for porcupine's client ids
	jobs            chan job
	workers         sync.WaitGroup
	deadline        time.Time
}

// job is one segment to decide: its key's place-th in check.
type job struct {
	check *modelCheck
	key   string
	place int
	seg   segment
}

// modelCheck is one model's check.
type modelCheck struct {
	name  string
	model porcupine.Model
	swept bool
	cut   cutFunc
	emit  func(job)
	keys  map[string]cutter
	// ops counts the ops of the segments cut so far; places counts each
	// key's segments.
	ops    int
	places map[string]int
	// first keeps the segments the visualization draws when none fails;
	// the workers' results (and failing) are under mu.
	first   vizKeep
	mu      sync.Mutex
	verdict Verdict
	failing vizKeep
	// failed are the spans of the earliest segments not decided legal,
	// where an Explainer looks for what went wrong; keep bounds them.
	failed spans
}

func newStream(opt Options) *stream {
	s := &stream{procs: map[int]bool{}, deadline: time.Now().Add(opt.Timeout)}
	workers := runtime.GOMAXPROCS(0)
	// A few segments queued per worker keep them busy while the ops are
	// read; more would only hold memory.
	s.jobs = make(chan job, 2*workers)
	lockCut, counterCut := cutLocks, cutCounter
	if opt.Whole {
		lockCut, counterCut = whole, whole
	}
	s.mutex = s.newCheck(MutexCheck, mutexModel, lockCut, !opt.Whole, opt.MaxViolations)
	s.resource = s.newCheck(ResourceCheck, counterModel, counterCut, !opt.Whole, opt.MaxViolations)
	for range workers {
		s.workers.Add(1)
		go s.work()
	}
	return s
}

func (s *stream) newCheck(name string, m porcupine.NondeterministicModel, cut cutFunc, swept bool, keep int) *modelCheck {
	return &modelCheck{name: name, model: segmented(m), swept: swept, cut: cut, verdict: Valid, failed: spans{keep: keep},
		keys: map[string]cutter{}, places: map[string]int{}, emit: func(j job) { s.jobs <- j }}
}

// add hands on one op, called no earlier than those before it. op must
// stay unchanged: the segments point to it.
func (s *stream) add(op *history.Op) {
	s.procs[op.Process] = true
	in, isLock := modelInput(op)
	switch {
	case in == nil:
	case isLock:
		s.mutex.add(op, in)
	default:
		s.resource.add(op, in)
	}
}

func (c *modelCheck) add(op *history.Op, in any) {
	k, ok := c.keys[op.Key]
	if !ok {
		key := op.Key
		k = c.cut(func(seg segment) {
			place := c.places[key]
			c.places[key]++
			c.ops += len(seg.ops)
			c.first.offer(key, place, seg)
			c.emit(job{check: c, key: key, place: place, seg: seg})
		})
		c.keys[op.Key] = k
	}
	k.add(porcupine.Operation{Input: in, Call: op.Call, Return: op.Return, Metadata: op})
}

// work decides segments until there are none.
func (s *stream) work() {
	defer s.workers.Done()
	for j := range s.jobs {
		c := j.check
		res, swept := porcupine.Unknown, false
		if c.swept {
			res, swept = sweep(j.seg)
		}
		if !swept {
			if left := time.Until(s.deadline); left > 0 {
				res = porcupine.CheckOperationsTimeout(c.model, j.seg.withStart(), left)
			}
		}
		c.mu.Lock()
		switch {
		case res == porcupine.Illegal:
			c.verdict = Invalid
		case res == porcupine.Unknown && c.verdict == Valid:
			c.verdict = Unknown
		}
		if res != porcupine.Ok {
			c.failing.offer(j.key, j.place, j.seg)
			c.failed.add(j.seg.span())
		}
		c.mu.Unlock()
	}
}

// invalid reports whether a segment decided so far is illegal.
func (c *modelCheck) invalid() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verdict == Invalid
}

// finish hands on what every cutter holds, waits for the workers and
// returns the two checks' results.
func (s *stream) finish(start int64, timeout time.Duration) (mutex, resource Result) {
	for _, c := range []*modelCheck{s.mutex, s.resource} {
		for _, k := range c.keys {
			k.finish()
		}
	}
	close(s.jobs)
	s.workers.Wait()
	ids := clientIDs(s.procs)
	return s.mutex.result(start, timeout, ids), s.resource.result(start, timeout, ids)
}

// result is the check's result once every segment is decided, with what
// its visualization draws.
func (c *modelCheck) result(start int64, timeout time.Duration, ids map[int]int) Result {
	r := Result{Check: c.name, Ops: c.ops, Verdict: c.verdict, model: c.model, start: start, timeout: timeout}
	if r.Verdict == Unknown {
		r.Note = fmt.Sprintf("porcupine did not finish within %s", timeout)
	}
	first, failing := c.first.kept(), c.failing.kept()
	for _, segs := range [][]segment{first, failing} {
		for _, s := range segs {
			for i := range s.ops {
				s.ops[i].ClientId = ids[s.ops[i].Metadata.(*history.Op).Process]
			}
		}
	}
	r.viz, r.Visualized = visualized(first, failing, c.failing.offered, c.failing.firstLen(), c.ops)
	return r
}

// vizKeep keeps, of the segments offered to it (each with its key and its
// place among the key's segments), those visualized may pick: the first
// of them in key order, then place order, that fit VizMaxOps together.
// The others are dropped as they come, so that a long history's check
// does not keep them for a page that cannot draw them.
type vizKeep struct {
	keys    map[string]*vizKey
	offered int
}

// vizKey is what a vizKeep keeps of one key.
type vizKey struct {
	// segs are kept in place order: those before the first that does not
	// fit VizMaxOps with them (cut says one did not, at cutPlace).
	segs     []placedSegment
	cut      bool
	cutPlace int
	// seen counts the ops of every segment offered.
	seen int
	// first is the length of the segment of the lowest place offered.
	firstPlace, first int
	// dropped: the keys before this one hold more than VizMaxOps ops, so
	// none of its segments can be picked.
	dropped bool
}

type placedSegment struct {
	place int
	seg   segment
}

func (v *vizKeep) offer(key string, place int, s segment) {
	if v.keys == nil {
		v.keys = map[string]*vizKey{}
	}
	k, ok := v.keys[key]
	if !ok || place < k.firstPlace {
		if !ok {
			k = &vizKey{}
			v.keys[key] = k
		}
		k.firstPlace, k.first = place, len(s.ops)
	}
	v.offered++
	k.seen += len(s.ops)
	if !k.dropped && (!k.cut || place < k.cutPlace) {
		at := sort.Search(len(k.segs), func(i int) bool { return k.segs[i].place > place })
		k.segs = slices.Insert(k.segs, at, placedSegment{place, s})
		n := 0
		for i, p := range k.segs {
			if n += len(p.seg.ops); n > VizMaxOps {
				k.cut, k.cutPlace = true, p.place
				clear(k.segs[i:])
				k.segs = k.segs[:i]
				break
			}
		}
	}
	// Keys come and go in any order: now and then, drop those behind more
	// ops than a page draws.
	if v.offered%64 == 0 {
		n := 0
		for _, key := range v.sortedKeys() {
			if k := v.keys[key]; n > VizMaxOps {
				k.dropped, k.segs = true, nil
			} else {
				n += k.seen
			}
		}
	}
}

func (v *vizKeep) sortedKeys() []string {
	keys := make([]string, 0, len(v.keys))
	for k := range v.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// kept returns the kept segments in key order, then place order, up to
// the first key some of whose segments were dropped: visualized stops
// picking by then.
func (v *vizKeep) kept() []segment {
	var out []segment
	for _, key := range v.sortedKeys() {
		k := v.keys[key]
		for _, p := range k.segs {
			out = append(out, p.seg)
		}
		if k.cut || k.dropped {
			break
		}
	}
	return out
}

// firstLen is the length of the first segment offered in key order, then
// place order; 0 when none was.
func (v *vizKeep) firstLen() int {
	keys := v.sortedKeys()
	if len(keys) == 0 {
		return 0
	}
	return v.keys[keys[0]].first
}

// modelInput is op's input to the mutex model (isLock) or to the counter
// model; nil when it is in neither, having definitely not happened.
func modelInput(op *history.Op) (in any, isLock bool) {
	switch op.F {
	case history.FAcquire, history.FRelease:
		if op.F == history.FAcquire && op.Outcome == history.Fail {
			return nil, false // definitely did not happen
		}
		return lockInput{Process: op.Process, F: op.F, Outcome: op.Outcome}, true
	case history.FCrash:
		// The dead client's lease may run out at any time from now: an
		// unknown release.
		return lockInput{Process: op.Process, F: history.FRelease, Outcome: history.Info}, true
	case history.FIncr, history.FRead:
		if op.Outcome == history.Fail || (op.F == history.FRead && op.Outcome != history.OK) {
			return nil, false
		}
		c := counterInput{Process: op.Process, F: op.F, Outcome: op.Outcome}
		switch {
		case op.Value != nil:
			c.Value = *op.Value
		case op.Outcome == history.Info:
			// A client killed inside its critical section: we never
			// learned what it read, but its write may have landed.
			c.Blind = true
		default:
			return nil, false
		}
		return c, false
	}
	return nil, false
}
