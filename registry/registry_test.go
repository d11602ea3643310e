package registry

import (
	"slices"
	"strings"
	"testing"
)

type thing struct{ name, what string }

func newThings(ts ...thing) *Of[thing] {
	r := New("thing", func(t thing) string { return t.name })
	for _, t := range ts {
		r.Register(t)
	}
	return r
}

func TestLookup(t *testing.T) {
	r := newThings(thing{"b", "bee"}, thing{"a", "ay"}, thing{"c", "see"})
	for _, tc := range []struct {
		name, want, err string
	}{
		{"a", "ay", ""},
		{"c", "see", ""},
		{"d", "", `unknown thing "d" (valid: [a b c])`},
		{"", "", `unknown thing "" (valid: [a b c])`},
	} {
		got, err := r.Lookup(tc.name)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("Lookup(%q) error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || got.what != tc.want):
			t.Errorf("Lookup(%q) = %v, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestSorted(t *testing.T) {
	r := newThings(thing{"b", "bee"}, thing{"a", "ay"}, thing{"c", "see"})
	if got := r.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Names() = %v", got)
	}
	var whats []string
	for _, v := range r.All() {
		whats = append(whats, v.what)
	}
	if !slices.Equal(whats, []string{"ay", "bee", "see"}) {
		t.Errorf("All() in order %v", whats)
	}
	if n := newThings(); len(n.Names()) != 0 || len(n.All()) != 0 {
		t.Errorf("empty registry lists %v", n.Names())
	}
}

func TestDuplicatePanics(t *testing.T) {
	r := newThings(thing{"a", "ay"})
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(p.(string), `duplicate thing "a"`) {
			t.Errorf("second Register of a: panic %v", p)
		}
		if v, _ := r.Lookup("a"); v.what != "ay" {
			t.Errorf("the duplicate replaced the first: %v", v)
		}
	}()
	r.Register(thing{"a", "other"})
}
