package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
	// At is the control host's time at the measurement's midpoint: two
	// measurements of a host bound how fast its clock runs against ours.
	At  time.Time `json:"at"`
	Err string    `json:"error,omitempty"`
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
const samples = 8

// MeasureOffset asks the host for its time (date +%s%N) between two
// readings of the control host's, t0 and t1: offset = remote − (t0+t1)/2,
// uncertainty = (t1−t0)/2, the best of a few tries. The tries share one
// session whose shell answers a line with the time: a session of its
// own per try would put its setup (a channel, a shell) on the way there
// only, and the midpoint would be late by half of it.
func MeasureOffset(ctx context.Context, h *Host, when string) Offset {
	best := Offset{Host: h.Name, When: when, Uncertainty: -1}
	fail := func(err error) Offset {
		best.Err = err.Error()
		return best
	}
	h.mu.Lock()
	client := h.client
	h.mu.Unlock()
	if client == nil {
		return fail(fmt.Errorf("host %s: connection closed", h.Name))
	}
	s, err := client.NewSession()
	if err != nil {
		return fail(fmt.Errorf("host %s: new session: %w", h.Name, err))
	}
	defer s.Close()
	in, err := s.StdinPipe()
	if err != nil {
		return fail(err)
	}
	outPipe, err := s.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	if err := s.Start("sh -c " + Quote("while read x; do date +%s%N; done")); err != nil {
		return fail(fmt.Errorf("host %s: %w", h.Name, err))
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	out := bufio.NewReader(outPipe)
	for range samples {
		t0 := time.Now()
		if _, err := io.WriteString(in, "t\n"); err != nil {
			return fail(fmt.Errorf("host %s: clock: %w", h.Name, err))
		}
		line, err := out.ReadString('\n')
		t1 := time.Now()
		if err != nil {
			return fail(fmt.Errorf("host %s: clock: %w", h.Name, err))
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			return fail(fmt.Errorf("host %s: date +%%s%%N answered %q (GNU date is needed)", h.Name, strings.TrimSpace(line)))
		}
		mid := t0.UnixNano() + t1.Sub(t0).Nanoseconds()/2
		u := t1.Sub(t0) / 2
		if best.Uncertainty < 0 || u < best.Uncertainty {
			best.Offset, best.Uncertainty, best.At = time.Duration(ns-mid), u, time.Unix(0, mid)
		}
	}
	in.Close()
	return best
}
