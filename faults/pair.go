package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/locktest/locktest/scenario"
)

// A pair is two faults that strike together: one item of the fault list,
// "latency+pause-acquire". Each fault of a run keeps its own schedule, so
// two faults coincide only by chance; the anomalies of real locks often
// need two at once (a reply delayed while the client pauses inside its
// acquire, a partition during a clock jump). Each strike of a pair starts
// both faults at the same lock moment (and, where both aim at the holder,
// at the same client), holds each for its own length and heals both
// before the next. The first fault lasts --fault-duration, the second
// --fault-duration2; each records its own fault-start and fault-stop, so
// each is judged by its own aim.

// PairJoin joins the two faults of a pair in an item of the fault list.
const PairJoin = "+"

// Members are the names of the faults of one item of the fault list: the
// item itself, or a pair's two.
func Members(item string) []string { return strings.Split(item, PairJoin) }

// MemberNames are the names of every fault of the list, pairs split.
func MemberNames(items []string) []string {
	var out []string
	for _, it := range items {
		out = append(out, Members(it)...)
	}
	return out
}

// CheckItem refuses an item of the fault list that no pair can be by its
// names alone: a fault with itself, none in a pair, more than two faults.
func CheckItem(item string) error {
	ms := Members(item)
	switch {
	case len(ms) == 1:
		return nil
	case len(ms) > 2:
		return fmt.Errorf("%s joins %d faults: a pair joins two (a+b)", item, len(ms))
	case ms[0] == "" || ms[1] == "":
		return fmt.Errorf("%s: a pair joins two fault names (a+b)", item)
	case ms[0] == ms[1]:
		return fmt.Errorf("%s pairs %s with itself: pair two different faults, or give %s alone", item, ms[0], ms[0])
	case ms[0] == None || ms[1] == None:
		return fmt.Errorf("%s: %s injects nothing and cannot be one of a pair: give the other fault alone", item, None)
	}
	return nil
}

// LookupItem returns the faults of one item of the fault list: one, or a
// pair's two, refusing a pair whose faults cannot strike together.
func LookupItem(item string) ([]Fault, error) {
	if err := CheckItem(item); err != nil {
		return nil, err
	}
	var out []Fault
	for _, name := range Members(item) {
		f, err := Lookup(name)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 2 {
		return out, checkPair(item, out[0], out[1])
	}
	return out, nil
}

// checkPair refuses two faults that cannot strike together: one that
// keeps a schedule of its own, two that seize the same thing (one's heal
// would undo the other's strike), or two sized by the same setting (the
// pair could not give each its own size).
func checkPair(item string, a, b Fault) error {
	ta, tb := a.Traits(), b.Traits()
	for _, f := range []Fault{a, b} {
		if f.Traits().OwnSchedule {
			return fmt.Errorf("%s: %s keeps a schedule of its own and cannot strike together with another fault: give it alone", item, f.Name())
		}
	}
	switch {
	case ta.Seizes != "" && ta.Seizes == tb.Seizes:
		return fmt.Errorf("%s: %s and %s both seize %s, so one's heal would undo the other's strike: pair faults that act on different things",
			item, a.Name(), b.Name(), ta.Seizes)
	case ta.Size.Setting != "" && ta.Size.Setting == tb.Size.Setting:
		return fmt.Errorf("%s: %s and %s are both sized by --%s, so the pair cannot give each its own size: pair faults sized by different settings",
			item, a.Name(), b.Name(), ta.Size.Setting)
	}
	return nil
}

// Second reports whether f is the second fault of a pair in c's faults.
func Second(c scenario.Config, f Fault) bool {
	for _, it := range c.Faults {
		if ms := Members(it); len(ms) == 2 && ms[1] == f.Name() {
			return true
		}
	}
	return false
}

// Own is c as fault f sees it: the second fault of a pair lasts
// --fault-duration2 (FaultDuration2), which Own puts in FaultDuration, so
// that a fault's warnings and its length read one field whichever place
// it has in a pair.
func Own(c scenario.Config, f Fault) scenario.Config {
	if Second(c, f) && c.FaultDuration2 != 0 {
		c.FaultDuration = c.FaultDuration2
	}
	return c
}

// Pairing is one fault's side of a pair: the two faults of a pair share
// it, and each strike of either waits for the other's (Env.Pair).
type Pairing struct {
	lead bool
	*pairing
}

// pairing is what the two sides share: the follower says it is ready for
// a strike (its last one healed), the leader waits out the quiet time and
// the lock moment and hands it the strike.
type pairing struct {
	ready chan struct{}
	start chan *pairStrike
}

// pairStrike is one strike of a pair: the client whose lock moment it was
// aligned to (-1 for none), and the holder both faults hit when the strike
// waits for no moment, chosen once by whichever asks first.
type pairStrike struct {
	client int
	once   sync.Once
	holder int
	err    error
}

// Pair returns the two sides of a new pair, the first fault's (which keeps
// the schedule) and the second's.
func Pair() (first, second *Pairing) {
	p := &pairing{ready: make(chan struct{}), start: make(chan *pairStrike, 1)}
	return &Pairing{lead: true, pairing: p}, &Pairing{pairing: p}
}

// next waits for the fault's next strike: alone, the quiet time and the
// lock moment (align); in a pair, the leader does that once both sides
// are ready and the follower waits for it. It returns false when ctx
// ended first.
func (e *Env) next(ctx context.Context) bool {
	e.strike = nil
	p := e.Pair
	switch {
	case p == nil:
		return e.Wait(ctx) && e.align(ctx)
	case p.lead:
		select {
		case <-p.ready:
		case <-ctx.Done():
			return false
		}
		// The follower now waits for this answer alone: a strike, or nil
		// when the run ended first. Were it to watch ctx too, a run ending
		// as the strike is handed over could start one half of the pair.
		if !e.Wait(ctx) || !e.align(ctx) {
			p.start <- nil
			return false
		}
		e.strike = &pairStrike{client: e.momentClient}
		p.start <- e.strike // buffered: the follower takes it when it can
		return true
	}
	select {
	case p.ready <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	if e.strike = <-p.start; e.strike == nil {
		return false
	}
	e.momentClient = e.strike.client
	return true
}

// holderOf is the client holding the lock that both faults of a pair's
// strike hit: the first of them to ask waits for the next grant.
func (s *pairStrike) holderOf(ctx context.Context, e *Env) (int, error) {
	s.once.Do(func() { s.holder, s.err = e.NextHolder(ctx) })
	return s.holder, s.err
}
