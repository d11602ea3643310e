package checker

import (
	"fmt"
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
// The note says what is left out.
func visualized(segs, failing []segment, total int) ([]segment, string) {
	if total <= VizMaxOps {
		return segs, ""
	}
	pick := segs
	if len(failing) > 0 {
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
	case len(failing) == 0:
		return out, fmt.Sprintf("the visualization draws the first %d of %d operations: the history is long and every "+
			"stretch of it is linearizable", n, total)
	case len(out) == 0:
		return nil, fmt.Sprintf("the visualization draws nothing: the first stretch where the check failed has %d "+
			"operations, more than the %d a page can draw", len(failing[0].ops), VizMaxOps)
	default:
		return out, fmt.Sprintf("the visualization draws %d of the %d stretch(es) where the check failed (%d of %d "+
			"operations); the rest of the history is linearizable or not drawn", len(out), len(failing), n, total)
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
// with the faults of their time span annotated.
func (r Result) WriteVisualization(path string, faults []history.Fault) error {
	if r.model.Init == nil {
		return fmt.Errorf("no %s check to visualize", r.Check)
	}
	var parts [][]porcupine.Operation
	from, to := int64(history.Never), int64(0)
	for _, s := range r.viz {
		ops := s.withStart()
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
	// The segments are already cut: Partition hands them over as they are.
	_, info := porcupine.CheckOperationsVerbose(model, nil, r.timeout)
	if from > to {
		from, to = 0, 1 // nothing drawn: the note alone
	}
	var notes []porcupine.Annotation
	for _, f := range faults {
		if r.Visualized != "" && (f.Stop < from || f.Start > to) {
			continue // outside what is drawn
		}
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
