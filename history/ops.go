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
	type pk struct{ process, seq int }
	open := map[pk]int{}
	invokes := 0
	for _, r := range recs {
		if r.Type == Invoke {
			invokes++
		}
	}
	ops := make([]Op, 0, invokes)
	for _, r := range recs {
		switch r.Type {
		case Invoke:
			open[pk{r.Process, r.Seq}] = len(ops)
			ops = append(ops, Op{
				Process: r.Process, Seq: r.Seq, F: r.F, Key: r.Key, Outcome: Info,
				Call: r.Time, Return: Never, Completed: Never, Value: r.Value,
				InvokeIndex: r.Index, CompleteIndex: -1,
			})
		case OK, Fail, Info:
			i, ok := open[pk{r.Process, r.Seq}]
			if !ok {
				continue
			}
			delete(open, pk{r.Process, r.Seq})
			op := &ops[i]
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
	}
	// Records arrive in time order, so ops usually are in call order already.
	byCall := func(a, b Op) int { return cmp.Compare(a.Call, b.Call) }
	if !slices.IsSortedFunc(ops, byCall) {
		slices.SortStableFunc(ops, byCall)
	}
	return ops
}

// Faults returns fault intervals in start order. A fault never stopped lasts
// to the last record's time.
func Faults(recs []Record) []Fault {
	type fk struct{ name, target string }
	open := map[fk]int{}
	var end int64
	var out []Fault
	for _, r := range recs {
		end = max(end, r.Time)
		switch r.Type {
		case FaultStart:
			open[fk{r.Fault, r.Target}] = len(out)
			out = append(out, Fault{Name: r.Fault, Target: r.Target, Moment: r.Moment, Point: r.Point, Aim: r.Aim, Start: r.Time})
		case FaultStop:
			if i, ok := open[fk{r.Fault, r.Target}]; ok {
				out[i].Stop, out[i].Healed = r.Time, true
				delete(open, fk{r.Fault, r.Target})
			}
		}
	}
	for _, i := range open {
		out[i].Stop = end
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
