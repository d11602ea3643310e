package remote

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Offset is a host's clock offset to the control host's, as NTP measures
// it: the host's time minus the control host's, within ± Uncertainty.
type Offset struct {
	Host        string        `json:"host"`
	When        string        `json:"when"` // "start", "end"
	Offset      time.Duration `json:"offset_ns"`
	Uncertainty time.Duration `json:"uncertainty_ns"`
	Err         string        `json:"error,omitempty"`
}

func (o Offset) String() string {
	if o.Err != "" {
		return fmt.Sprintf("clock of host %s at %s: not measured: %s", o.Host, o.When, o.Err)
	}
	return fmt.Sprintf("clock of host %s at %s: %+.3f ms from the control host's, ± %.3f ms", o.Host, o.When,
		float64(o.Offset)/1e6, float64(o.Uncertainty)/1e6)
}

// samples is how many round trips a measurement makes; the one with the
// shortest round trip is kept, as its midpoint is the least uncertain.
const samples = 5

// MeasureOffset asks the host for its time (date +%s%N) between two
// readings of the control host's, t0 and t1: offset = remote − (t0+t1)/2,
// uncertainty = (t1−t0)/2, the best of a few tries.
func MeasureOffset(ctx context.Context, h *Host, when string) Offset {
	best := Offset{Host: h.Name, When: when, Uncertainty: -1}
	for range samples {
		t0 := time.Now()
		out, err := h.Run(ctx, "date +%s%N", nil)
		t1 := time.Now()
		if err != nil {
			best.Err = err.Error()
			return best
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			best.Err = fmt.Sprintf("date +%%s%%N answered %q (GNU date is needed)", strings.TrimSpace(out))
			return best
		}
		mid := t0.UnixNano() + t1.Sub(t0).Nanoseconds()/2
		u := t1.Sub(t0) / 2
		if best.Uncertainty < 0 || u < best.Uncertainty {
			best.Offset, best.Uncertainty = time.Duration(ns-mid), u
		}
	}
	return best
}
