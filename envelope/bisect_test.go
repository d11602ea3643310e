package envelope

import (
	"math"
	"testing"
)

// threshold judges every magnitude at or above t unsafe, and records what
// it was asked.
type threshold struct {
	t     float64
	asked []float64
}

func (th *threshold) judge(m float64) State {
	th.asked = append(th.asked, m)
	if m >= th.t {
		return Unsafe
	}
	return Safe
}

func TestSearchFindsThreshold(t *testing.T) {
	s := Search{Lo: 0.25, Hi: 4, Tol: 0.1, MaxPoints: 8}
	for _, boundary := range []float64{0.26, 0.5, 1, 1.07, 2, 2.9, 3.99} {
		th := &threshold{t: boundary}
		o, err := s.Run(th.judge)
		if err != nil {
			t.Fatal(err)
		}
		if o.Finding != FoundBoundary || !o.Converged {
			t.Fatalf("boundary %g: finding %s, converged %v", boundary, o.Finding, o.Converged)
		}
		if !(*o.Safe < boundary && boundary <= *o.Unsafe) {
			t.Errorf("boundary %g: bracket [%g, %g] does not hold it", boundary, *o.Safe, *o.Unsafe)
		}
		if w := *o.Unsafe - *o.Safe; w > s.Tol {
			t.Errorf("boundary %g: bracket width %g > %g", boundary, w, s.Tol)
		}
		if o.Points != len(th.asked) || o.Points > s.MaxPoints {
			t.Errorf("boundary %g: %d points reported, %d judged, budget %d", boundary, o.Points, len(th.asked), s.MaxPoints)
		}
		if th.asked[0] != s.Lo || th.asked[1] != s.Hi {
			t.Errorf("boundary %g: the ends were not judged first: %v", boundary, th.asked)
		}
		seen := map[float64]bool{}
		for _, m := range th.asked {
			if seen[m] {
				t.Errorf("boundary %g: %g judged twice: %v", boundary, m, th.asked)
			}
			seen[m] = true
		}
	}
}

func TestSearchEnds(t *testing.T) {
	s := Search{Lo: 0.25, Hi: 4, Tol: 0.1, MaxPoints: 8}
	tests := []struct {
		name    string
		judge   func(float64) State
		finding Finding
		points  int
		safe    float64 // NaN: none
		unsafe  float64
	}{
		{"fenced: safe everywhere", func(float64) State { return Safe }, FoundNone, 2, 4, math.NaN()},
		{"unsafe from the start", func(float64) State { return Unsafe }, FoundBelow, 1, math.NaN(), 0.25},
		{"low end unknown", func(float64) State { return Unknown }, FoundUnknown, 1, math.NaN(), math.NaN()},
		{"high end unknown", func(m float64) State {
			if m > 1 {
				return Unknown
			}
			return Safe
		}, FoundUnknown, 2, 0.25, math.NaN()},
		{"unknown inside: the bracket so far", func(m float64) State {
			switch {
			case m >= 4:
				return Unsafe
			case m > 1:
				return Unknown
			}
			return Safe
		}, FoundUnknown, 3, 0.25, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := s.Run(tt.judge)
			if err != nil {
				t.Fatal(err)
			}
			if o.Finding != tt.finding || o.Points != tt.points {
				t.Fatalf("got %s after %d points, want %s after %d", o.Finding, o.Points, tt.finding, tt.points)
			}
			check := func(what string, got *float64, want float64) {
				switch {
				case math.IsNaN(want) && got != nil:
					t.Errorf("%s = %g, want none", what, *got)
				case !math.IsNaN(want) && (got == nil || *got != want):
					t.Errorf("%s = %v, want %g", what, got, want)
				}
			}
			check("safe", o.Safe, tt.safe)
			check("unsafe", o.Unsafe, tt.unsafe)
		})
	}
}

func TestSearchBudget(t *testing.T) {
	th := &threshold{t: 1.3}
	o, err := Search{Lo: 0.25, Hi: 4, Tol: 0.1, MaxPoints: 4}.Run(th.judge)
	if err != nil {
		t.Fatal(err)
	}
	if o.Finding != FoundBoundary || o.Converged || o.Points != 4 {
		t.Fatalf("got %s converged=%v after %d points, want an unconverged boundary after 4", o.Finding, o.Converged, o.Points)
	}
	if !(*o.Safe < 1.3 && 1.3 <= *o.Unsafe) {
		t.Errorf("bracket [%g, %g] does not hold 1.3", *o.Safe, *o.Unsafe)
	}
}

// A noisy design can be unsafe at one magnitude and safe just above it: the
// bracket still ends between a safe and an unsafe point.
func TestSearchNotMonotonic(t *testing.T) {
	judged := map[float64]State{}
	o, err := Search{Lo: 0.25, Hi: 4, Tol: 0.1, MaxPoints: 10}.Run(func(m float64) State {
		st := Safe
		if m >= 1 && !(m > 2 && m < 2.2) {
			st = Unsafe
		}
		judged[m] = st
		return st
	})
	if err != nil {
		t.Fatal(err)
	}
	if judged[*o.Safe] != Safe || judged[*o.Unsafe] != Unsafe || *o.Unsafe-*o.Safe > 0.1 {
		t.Errorf("bracket [%g, %g] is not a safe point next to an unsafe one: %v", *o.Safe, *o.Unsafe, judged)
	}
}

func TestSearchRefusesBadBracket(t *testing.T) {
	for _, s := range []Search{
		{Lo: 4, Hi: 0.25, Tol: 0.1, MaxPoints: 8},
		{Lo: 0.25, Hi: 4, Tol: 0, MaxPoints: 8},
		{Lo: 0.25, Hi: 4, Tol: 0.1, MaxPoints: 1},
	} {
		if _, err := s.Run(func(float64) State { return Safe }); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}
