package history

import (
	"cmp"
	"math"
	"slices"
)

// Never is the return time of an operation whose outcome is unknown: it may
// take effect at any point after its invocation.
const Never = math.MaxInt64

// Op is an invoke paired with its completion.
type Op struct {
	Process int
	Seq     int
	F       string
	Key     string
	Outcome Type // OK, Fail or Info
	Call    int64
	// Return is the completion time, or Never for an info op: an op whose
	// outcome is unknown may have taken effect at any later time.
	Return int64
	// Completed is the completion's time even for info ops (Never when the
	// op never completed at all).
	Completed int64
	Value     *int64
	Token     int64
	// Validity is what an ok acquire or renew said was left of its lease.
	Validity    int64
	Cmds        int
	Error       string
	InvokeIndex int
	// CompleteIndex is -1 when no completion was recorded (worker died, run
	// killed); such an op counts as info.
	CompleteIndex int
}

// Fault is one fault interval.
type Fault struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	// Moment is the lock moment the strike was aligned to, if any.
	Moment string `json:"moment,omitempty"`
	// Point is the checkpoint where the strike stopped its client, if any.
	Point string `json:"point,omitempty"`
	// Aim is whom the fault struck; "" in histories written before it
	// was recorded, judged as a fault on the whole lock.
	Aim   Aim   `json:"aim,omitempty"`
	Start int64 `json:"start"`
	// Stop is the time the fault was healed; the end of the history if it
	// never was (a killed run).
	Stop   int64 `json:"stop"`
	Healed bool  `json:"healed"`
}

// Ops pairs invokes with completions, in invocation order. An invoke
// without a completion is reported as info.
func Ops(recs []Record) []Op {
	open := map[opKey]int{}
	invokes := 0
	for _, r := range recs {
		if r.Type == Invoke {
			invokes++
		}
	}
	ops := make([]Op, 0, invokes)
	for i := range recs {
		r := &recs[i]
		switch r.Type {
		case Invoke:
			open[opKey{r.Process, r.Seq}] = len(ops)
			ops = append(ops, begin(r))
		case OK, Fail, Info:
			k := opKey{r.Process, r.Seq}
			if i, ok := open[k]; ok {
				delete(open, k)
				ops[i].complete(r)
			}
		}
	}
	// Records arrive in time order, so ops usually are in call order already.
	byCall := func(a, b Op) int { return cmp.Compare(a.Call, b.Call) }
	if !slices.IsSortedFunc(ops, byCall) {
		slices.SortStableFunc(ops, byCall)
	}
	return ops
}

// opKey pairs an invoke with its completion.
type opKey struct{ process, seq int }

// begin is the op r invokes, of unknown outcome until it completes.
func begin(r *Record) Op {
	return Op{
		Process: r.Process, Seq: r.Seq, F: r.F, Key: r.Key, Outcome: Info,
		Call: r.Time, Return: Never, Completed: Never, Value: r.Value,
		InvokeIndex: r.Index, CompleteIndex: -1,
	}
}

// complete records op's completion r.
func (op *Op) complete(r *Record) {
	op.Outcome = r.Type
	op.Completed = r.Time
	if r.Type != Info {
		op.Return = r.Time
	}
	if r.Value != nil {
		op.Value = r.Value
	}
	op.Token, op.Validity, op.Cmds, op.Error, op.CompleteIndex = r.Token, r.Validity, r.Cmds, r.Error, r.Index
}

// Pairing pairs invokes with completions as the records come, as Ops
// does for a whole history, holding only the ops in flight.
type Pairing struct {
	open map[opKey]*Op
}

// Add takes the next record. An invoke begins an op, returned as begun;
// its completion completes it in place. The op that can no longer change
// is returned as ended: one completed now, or one whose process and seq
// were invoked again (Ops leaves it without completion, info).
func (p *Pairing) Add(r *Record) (begun, ended *Op) {
	if p.open == nil {
		p.open = map[opKey]*Op{}
	}
	k := opKey{r.Process, r.Seq}
	switch r.Type {
	case Invoke:
		ended = p.open[k]
		op := begin(r)
		p.open[k] = &op
		return &op, ended
	case OK, Fail, Info:
		if op, ok := p.open[k]; ok {
			delete(p.open, k)
			op.complete(r)
			return nil, op
		}
	}
	return nil, nil
}

// Open reports whether op may still complete.
func (p *Pairing) Open(op *Op) bool { return p.open[opKey{op.Process, op.Seq}] == op }

// End says the history ended: the ops still open never completed (info).
// It returns them, in no order.
func (p *Pairing) End() []*Op {
	out := make([]*Op, 0, len(p.open))
	for _, op := range p.open {
		out = append(out, op)
	}
	clear(p.open)
	return out
}

// Faults returns fault intervals in start order. A fault never stopped lasts
// to the last record's time.
func Faults(recs []Record) []Fault {
	var l FaultLog
	for i := range recs {
		l.Add(&recs[i])
	}
	return l.Faults()
}

// FaultLog gathers the faults of a history as its records come.
type FaultLog struct {
	open map[faultKey]int
	end  int64
	out  []Fault
}

type faultKey struct{ name, target string }

// Add takes the next record.
func (l *FaultLog) Add(r *Record) {
	if l.open == nil {
		l.open = map[faultKey]int{}
	}
	l.end = max(l.end, r.Time)
	switch r.Type {
	case FaultStart:
		l.open[faultKey{r.Fault, r.Target}] = len(l.out)
		l.out = append(l.out, Fault{Name: r.Fault, Target: r.Target, Moment: r.Moment, Point: r.Point, Aim: r.Aim, Start: r.Time})
	case FaultStop:
		if i, ok := l.open[faultKey{r.Fault, r.Target}]; ok {
			l.out[i].Stop, l.out[i].Healed = r.Time, true
			delete(l.open, faultKey{r.Fault, r.Target})
		}
	}
}

// Faults returns the faults so far, in start order; one not stopped lasts
// to the latest record's time.
func (l *FaultLog) Faults() []Fault {
	out := slices.Clone(l.out)
	for _, i := range l.open {
		out[i].Stop = l.end
	}
	return out
}

// Start returns the earliest time in the history, the origin for display.
func Start(recs []Record) int64 {
	var t int64 = Never
	for _, r := range recs {
		t = min(t, r.Time)
	}
	if t == Never {
		return 0
	}
	return t
}
