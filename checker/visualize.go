package checker

import (
	"fmt"
	"html"
	"os"

	"github.com/anishathalye/porcupine"

	"github.com/locktest/locktest/history"
)

// VizMaxOps bounds the operations porcupine's visualization draws: its page
// takes some 300 bytes per operation and a browser struggles past a few
// megabytes, so a long history shows the stretches that failed, or its
// beginning.
const VizMaxOps = 20000

// visualized picks the segments to draw: all of them if they fit, else the
// failing ones that fit, else (all linearizable) the first ones that fit.
// The note says what is left out. A check keeps only what can be picked
// (vizKeep): first is the segments in order from the first on (all of them
// when the total fits), failing the failing ones in order from the first
// on, which has firstFailing ops, of failed in all.
func visualized(first, failing []segment, failed, firstFailing, total int) ([]segment, string) {
	if total <= VizMaxOps {
		return first, ""
	}
	pick := first
	if failed > 0 {
		pick = failing
	}
	var out []segment
	n := 0
	for _, s := range pick {
		if n+len(s.ops) > VizMaxOps {
			break
		}
		out = append(out, s)
		n += len(s.ops)
	}
	out = detach(out)
	switch {
	case failed == 0:
		return out, fmt.Sprintf("the visualization draws the first %d of %d operations: the history is long and every "+
			"stretch of it is linearizable", n, total)
	case len(out) == 0:
		return nil, fmt.Sprintf("the visualization draws nothing: the first stretch where the check failed has %d "+
			"operations, more than the %d a page can draw", firstFailing, VizMaxOps)
	default:
		return out, fmt.Sprintf("the visualization draws %d of the %d stretch(es) where the check failed (%d of %d "+
			"operations); the rest of the history is linearizable or not drawn", len(out), failed, n, total)
	}
}

// detach copies the segments and the history ops they point to, so that a
// Result keeps what it draws alive, not the whole history.
func detach(segs []segment) []segment {
	out := make([]segment, len(segs))
	for i, s := range segs {
		ops := make([]porcupine.Operation, len(s.ops))
		meta := make([]history.Op, len(s.ops))
		for j, op := range s.ops {
			meta[j] = *op.Metadata.(*history.Op)
			op.Metadata = &meta[j]
			ops[j] = op
		}
		out[i] = segment{ops: ops, start: s.start}
	}
	return out
}

// WriteVisualization writes porcupine's interactive HTML for this check:
// the picked segments, re-checked to find their (partial) linearizations,
// with the faults of their time span annotated. Times on the page count
// from the history's start, as in the summary, the report and the plots.
func (r Result) WriteVisualization(path string, faults []history.Fault) error {
	if r.model.Init == nil {
		return fmt.Errorf("no %s check to visualize", r.Check)
	}
	var parts [][]porcupine.Operation
	from, to := int64(history.Never), int64(0)
	for _, s := range r.viz {
		ops := shifted(s.withStart(), r.start)
		parts = append(parts, ops)
		for _, op := range ops {
			from, to = min(from, op.Call), max(to, op.Call)
			if op.Return != history.Never {
				to = max(to, op.Return)
			}
		}
	}
	model := r.model
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	model.DescribeOperationMetadata = func(info any) string { return opMetadata(info, r.start) }
	// The segments are already cut: Partition hands them over as they are.
	_, info := porcupine.CheckOperationsVerbose(model, nil, r.timeout)
	if from > to {
		from, to = 0, 1 // nothing drawn: the note alone
	}
	var notes []porcupine.Annotation
	for _, f := range faults {
		f.Start, f.Stop = f.Start-r.start, f.Stop-r.start
		if r.Visualized != "" && (f.Stop < from || f.Start > to) {
			continue // outside what is drawn
		}
		// The page shows annotations as text: not escaped.
		notes = append(notes, porcupine.Annotation{
			Tag: "faults", Start: f.Start, End: f.Stop,
			Description: f.Name, Details: f.Name + " on " + f.Target,
			BackgroundColor: "#f3c6c6",
		})
	}
	if r.Visualized != "" {
		notes = append(notes, porcupine.Annotation{Tag: "note", Start: from, End: to,
			Description: "not the whole history", Details: r.Visualized, BackgroundColor: "#fff3d6"})
	}
	info.AddAnnotations(notes)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write visualization: %w", err)
	}
	if err := porcupine.Visualize(model, info, f); err != nil {
		f.Close()
		return fmt.Errorf("write visualization: %w", err)
	}
	return f.Close()
}

// shifted copies ops with their times counted from start, so that the
// page's call and return times (nanoseconds) read as the summary's.
func shifted(ops []porcupine.Operation, start int64) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		op.Call -= start
		if op.Return != history.Never {
			op.Return -= start
		}
		out[i] = op
	}
	return out
}

// opMetadata is an op's text in the page's tooltip, which porcupine
// inserts as HTML: all of it is escaped, for a client's error (and a
// config's key) can be any text, markup included.
func opMetadata(info any, start int64) string {
	op, ok := info.(*history.Op)
	if !ok {
		return "state known from the stretch before (the history is checked in stretches)"
	}
	s := fmt.Sprintf("record #%d: c%d %s %q %s, called at %s", op.InvokeIndex, op.Process, op.F, op.Key, op.Outcome,
		Seconds(op.Call, start))
	if op.Return != history.Never {
		s += ", returned at " + Seconds(op.Return, start)
	}
	if op.Error != "" {
		s += ": " + op.Error
	}
	return html.EscapeString(s)
}
