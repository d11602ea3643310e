package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/history"
)

// Health is whether the harness kept the timing it was asked for: a
// saturated machine or too many clients stretch faults, start clients late
// and cut the run short, and a verdict on such a run says less than it
// seems to. Lengths are in seconds, lags in milliseconds.
type Health struct {
	// RunAskedS is --duration; RunS is the run's start to the final heal
	// (absent when the run never got there).
	RunAskedS float64  `json:"run_asked_s"`
	RunS      *float64 `json:"run_s,omitempty"`
	// FinalHealLateS is how long after the asked end the final heal came.
	FinalHealLateS *float64 `json:"final_heal_late_s,omitempty"`
	// ClientSpanS is the first client operation to the last.
	ClientSpanS float64 `json:"client_span_s"`
	// ClientsStartS is how long from the run's start until every client
	// that ran had its first operation (0 when all began before it).
	ClientsStartS  float64 `json:"clients_start_s"`
	ClientsStarted int     `json:"clients_started"`
	// LagP99Ms and LagMaxMs are how late the coordinator's periodic
	// wake-ups came during the run.
	LagP99Ms float64 `json:"lag_p99_ms"`
	LagMaxMs float64 `json:"lag_max_ms"`
	LagTicks int     `json:"lag_ticks"`
	// Strikes are the fault occurrences that keep the plain schedule,
	// compared with the length asked (cut to the run's end); StrikesOff
	// lasted under half or over one and a half times it.
	Strikes    int `json:"strikes"`
	StrikesOff int `json:"strikes_off"`
	// MinRatio and MaxRatio are the shortest and longest strike over its
	// asked length; HealLateMaxS is the latest a heal came after it.
	// A strike lasts until its heal begins: a killed server's restart
	// (a JVM's start, a database's recovery) is its own, not the
	// harness's timing, and HealTookMaxS says how long the longest took.
	// ClientRestartMaxS is the same for a killed client's restart (a
	// strike aimed at a client, kill-holder): the new worker process is
	// spawned, not waited for, so it takes milliseconds, and it is no
	// server serving again.
	MinRatio          float64 `json:"min_ratio,omitempty"`
	MaxRatio          float64 `json:"max_ratio,omitempty"`
	HealLateMaxS      float64 `json:"heal_late_max_s,omitempty"`
	HealTookMaxS      float64 `json:"heal_took_max_s,omitempty"`
	ClientRestartMaxS float64 `json:"client_restart_max_s,omitempty"`
	// Problems say where timing was not honoured.
	Problems []string `json:"problems,omitempty"`
	// Undelivered says why the faults were not delivered as asked: a
	// valid verdict then is no evidence.
	Undelivered []string `json:"undelivered,omitempty"`
	// CutShortS is how far into the run its history goes when the run
	// ended before its duration without a run-end mark (its coordinator
	// was killed or interrupted): what was checked is a prefix of the run
	// asked for, and a valid verdict on it is no evidence.
	CutShortS *float64 `json:"cut_short_s,omitempty"`
	// NoFinalRead: the run reached its end mark but its history has no
	// final read, which a workload that reads its data back makes last:
	// its coordinator was killed or interrupted in between, and the lost
	// updates only that read exposes went uncounted.
	NoFinalRead bool `json:"no_final_read,omitempty"`
	// StoppedBy names the checks whose violations ended the run before
	// its duration (--stop-on-violation). The run's length, the clients'
	// span and the strikes are then judged against where it stopped.
	StoppedBy []string `json:"stopped_by,omitempty"`
}

// Thresholds beyond which a run's timing was not honoured.
const (
	maxLagP99      = 100 * time.Millisecond
	minStrikeRatio = 0.5
	maxStrikeRatio = 1.5
	minSpanRatio   = 0.8
	// maxClientsStart and maxFinalHealLate are fractions of the duration.
	maxClientsStart  = 0.2
	maxFinalHealLate = 0.25
	// minCompared: a strike the run's end cut shorter than this says
	// nothing about timing.
	minCompared = 100 * time.Millisecond
)

// MeasureHealth compares what the history shows the harness did with what
// it was asked: faults are the names of the faults asked for, finalRead
// whether the run ends by reading its data back. It returns nil for a
// history without a run-start mark (written by an older build).
func MeasureHealth(recs []history.Record, faults []string, finalRead bool) *Health {
	var m HealthMeter
	for i := range recs {
		m.Add(&recs[i])
	}
	return m.Health(faults, finalRead)
}

// HealthMeter measures a history's Health record by record, as
// MeasureHealth does for a whole history, holding a few times per client
// and per fault strike instead of the records: a check that reads the
// history as it goes measures it on the way.
type HealthMeter struct {
	// start and end are the last run-start and run-end marks.
	start, end       *history.Record
	coordinatorReads bool
	last             int64
	// first is each client's first invoke; lo and hi bound the clients'
	// records.
	first  map[int]int64
	lo, hi int64
	// open are the strikes begun and not stopped; stops the stopped ones,
	// judged once the run's end (and so its deadline) is known.
	open    map[strikeKey]history.Record
	stops   []stoppedStrike
	started map[string]bool
}

type strikeKey struct{ fault, target string }

// stoppedStrike is one fault occurrence stopped: its start (ok: one was
// recorded) and its stop.
type stoppedStrike struct {
	start, stop history.Record
	ok          bool
}

// Add takes the next record of the history.
func (m *HealthMeter) Add(r *history.Record) {
	if m.first == nil {
		m.first, m.open, m.started, m.lo = map[int]int64{}, map[strikeKey]history.Record{}, map[string]bool{}, history.Never
	}
	m.last = max(m.last, r.Time)
	switch r.Type {
	case history.RunStart:
		m.start = copyRecord(r)
	case history.RunEnd:
		m.end = copyRecord(r)
	case history.FaultStart:
		m.started[r.Fault] = true
		m.open[strikeKey{r.Fault, r.Target}] = *r
	case history.FaultStop:
		k := strikeKey{r.Fault, r.Target}
		s, ok := m.open[k]
		delete(m.open, k)
		m.stops = append(m.stops, stoppedStrike{start: s, stop: *r, ok: ok})
	}
	if r.Process == history.NemesisProcess && r.F == history.FRead {
		m.coordinatorReads = true
	}
	if r.Process == history.NemesisProcess || r.Type == history.FaultStart || r.Type == history.FaultStop {
		return
	}
	if _, ok := m.first[r.Process]; !ok && r.Type == history.Invoke {
		m.first[r.Process] = r.Time
	}
	m.lo, m.hi = min(m.lo, r.Time), max(m.hi, r.Time)
}

// copyRecord is a copy of r, which its reader may reuse.
func copyRecord(r *history.Record) *history.Record {
	c := *r
	return &c
}

// Health is the health of the records added (see MeasureHealth).
func (m *HealthMeter) Health(faults []string, finalRead bool) *Health {
	start, end := m.start, m.end
	if start == nil {
		return nil
	}
	asked := time.Duration(start.Asked)
	deadline := start.Time + start.Asked
	h := &Health{RunAskedS: asked.Seconds()}
	// span is the length the clients' activity is judged against.
	span := h.RunAskedS
	if end != nil && len(end.Stopped) > 0 {
		h.StoppedBy = end.Stopped
		deadline = min(deadline, end.Time)
		span = min(span, seconds(end.Time-start.Time))
	}
	if end != nil {
		h.NoFinalRead = finalRead && !m.coordinatorReads
		runS, late := seconds(end.Time-start.Time), max(0, seconds(end.Time-deadline))
		h.RunS, h.FinalHealLateS = &runS, &late
		if end.Lag != nil {
			h.LagP99Ms, h.LagMaxMs, h.LagTicks = float64(end.Lag.P99)/1e6, float64(end.Lag.Max)/1e6, end.Lag.Ticks
		}
	} else if m.last < deadline {
		// A run past its duration that missed only its final heal tested
		// all it was asked to.
		got := seconds(m.last - start.Time)
		h.CutShortS = &got
	}

	// Clients: their ops' span and when each began.
	if m.hi > 0 {
		h.ClientSpanS = seconds(m.hi - m.lo)
	}
	h.ClientsStarted = len(m.first)
	for _, t := range m.first {
		h.ClientsStartS = max(h.ClientsStartS, seconds(t-start.Time))
	}

	// Faults: each plain-schedule strike against its asked length.
	for _, st := range m.stops {
		s, r := st.start, st.stop
		want := min(s.Asked, deadline-s.Time)
		if !st.ok || s.Asked == 0 || want < int64(minCompared) {
			continue
		}
		end := r.Time
		if r.HealStart > 0 {
			end = r.HealStart
			if took := seconds(r.Time - r.HealStart); history.IsClient(r.Target) {
				h.ClientRestartMaxS = max(h.ClientRestartMaxS, took)
			} else {
				h.HealTookMaxS = max(h.HealTookMaxS, took)
			}
		}
		ratio := float64(end-s.Time) / float64(want)
		if h.Strikes == 0 || ratio < h.MinRatio {
			h.MinRatio = ratio
		}
		h.MaxRatio = max(h.MaxRatio, ratio)
		h.HealLateMaxS = max(h.HealLateMaxS, seconds(end-s.Time-want))
		h.Strikes++
		if ratio < minStrikeRatio || ratio > maxStrikeRatio {
			h.StrikesOff++
		}
	}

	if lag := time.Duration(h.LagP99Ms * 1e6); lag > maxLagP99 {
		h.Problems = append(h.Problems, fmt.Sprintf("the coordinator woke up to %v late (p99, max %v): the machine was saturated",
			lag.Round(time.Millisecond), time.Duration(h.LagMaxMs*1e6).Round(time.Millisecond)))
	}
	if h.StrikesOff > 0 {
		h.Problems = append(h.Problems, fmt.Sprintf("%d of %d fault strike(s) lasted outside %.1f–%.1f× the length asked (%.2f–%.2f×)",
			h.StrikesOff, h.Strikes, minStrikeRatio, maxStrikeRatio, h.MinRatio, h.MaxRatio))
	}
	if h.ClientSpanS < minSpanRatio*span && end != nil {
		h.Problems = append(h.Problems, fmt.Sprintf("the clients ran for %.2f s of the %.2f s asked", h.ClientSpanS, span))
	}
	if h.ClientsStartS > maxClientsStart*h.RunAskedS {
		h.Problems = append(h.Problems, fmt.Sprintf("the last client began %.2f s into the %.2f s run", h.ClientsStartS, h.RunAskedS))
	}
	if h.FinalHealLateS != nil && *h.FinalHealLateS > maxFinalHealLate*h.RunAskedS {
		h.Problems = append(h.Problems, fmt.Sprintf("the final heal came %.2f s after the run's end", *h.FinalHealLateS))
	}

	if end != nil { // an unfinished run had no chance to deliver its faults
		for _, f := range slices.Compact(slices.Sorted(slices.Values(faults))) {
			if !m.started[f] && f != "none" { // the control run has nothing to start
				h.Undelivered = append(h.Undelivered, fmt.Sprintf("fault %s was asked for and never started", f))
			}
		}
	}
	if h.Strikes > 0 && h.StrikesOff == h.Strikes {
		h.Undelivered = append(h.Undelivered, fmt.Sprintf("every one of %d fault strike(s) lasted far from the length asked", h.Strikes))
	}
	return h
}

// Judge returns the verdict the health allows and the notes that say
// why: a valid verdict on faults not delivered as asked becomes unknown;
// an invalid one stays (a violation is a violation). So does a valid
// verdict on a run cut short. A nil Health changes nothing.
func (h *Health) Judge(v checker.Verdict) (checker.Verdict, []string) {
	if h == nil {
		return v, nil
	}
	var notes []string
	for _, p := range h.Problems {
		notes = append(notes, "timing not honoured: "+p)
	}
	if h.CutShortS != nil {
		cut := h.cutShort() + " (no run-end mark: its coordinator was killed or interrupted)"
		if v == checker.Valid {
			v = checker.Unknown
			notes = append(notes, "verdict unknown, not valid: the run was "+cut)
		} else {
			notes = append(notes, "the run was "+cut)
		}
	}
	if h.NoFinalRead {
		const cut = "cut short before its final read (its coordinator was killed or interrupted): lost updates went uncounted"
		if v == checker.Valid {
			v = checker.Unknown
			notes = append(notes, "verdict unknown, not valid: the run was "+cut)
		} else {
			notes = append(notes, "the run was "+cut)
		}
	}
	switch {
	case len(h.Undelivered) == 0:
	case v == checker.Valid:
		v = checker.Unknown
		notes = append(notes, "verdict unknown, not valid: "+strings.Join(h.Undelivered, "; "))
	default:
		notes = append(notes, "faults not delivered as asked: "+strings.Join(h.Undelivered, "; "))
	}
	return v, notes
}

// line is the summary's account of the health.
func (h *Health) line() string {
	state := "ok"
	switch {
	case h.CutShortS != nil || h.NoFinalRead:
		state = "CUT SHORT"
	case len(h.Problems)+len(h.Undelivered) > 0:
		state = "TIMING NOT HONOURED"
	}
	run := "never healed"
	switch {
	case h.CutShortS != nil:
		run = h.cutShort()
	case h.RunS != nil:
		run = fmt.Sprintf("%.2f s to the final heal (%.2f s late)", *h.RunS, *h.FinalHealLateS)
	}
	if h.NoFinalRead {
		run += ", cut short before its final read"
	}
	s := fmt.Sprintf("%s: run asked %.2f s, %s, clients active %.2f s, %d began within %.2f s; coordinator lag p99 %.0f ms, max %.0f ms",
		state, h.RunAskedS, run, h.ClientSpanS, h.ClientsStarted, h.ClientsStartS, h.LagP99Ms, h.LagMaxMs)
	if h.Strikes > 0 {
		s += fmt.Sprintf("; %d fault strike(s) at %.2f–%.2f× the length asked, heals up to %.0f ms late",
			h.Strikes, h.MinRatio, h.MaxRatio, h.HealLateMaxS*1e3)
		if h.HealTookMaxS > 0 {
			s += ", restarts serving within " + briefly(h.HealTookMaxS)
		}
		if h.ClientRestartMaxS > 0 {
			s += ", killed clients restarted within " + briefly(h.ClientRestartMaxS)
		}
	}
	if len(h.StoppedBy) > 0 && h.RunS != nil {
		s += fmt.Sprintf("; stopped at %.2f s, the %s check(s) having found a violation (--stop-on-violation)", *h.RunS, strings.Join(h.StoppedBy, " and "))
	}
	return s
}

// cutShort says how far a run cut short got: "cut short at 0.80 s of
// 8.00 s".
func (h *Health) cutShort() string {
	return fmt.Sprintf("cut short at %.2f s of %.2f s", *h.CutShortS, h.RunAskedS)
}

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// briefly formats a length of s seconds with the digits it needs: in
// milliseconds under a second, where "0.00 s" would read as no time.
func briefly(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}
