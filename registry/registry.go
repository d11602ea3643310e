package registry

import (
	"fmt"
	"slices"
)

// Of holds the registered values of one kind, keyed by the name each value
// carries. Registration happens in init functions, before any lookup, so
// it needs no lock.
type Of[T any] struct {
	kind   string
	name   func(T) string
	values map[string]T
}

// New returns an empty registry. kind names the values in messages
// ("impl", "fault"); name says what each value is called.
func New[T any](kind string, name func(T) string) *Of[T] {
	return &Of[T]{kind: kind, name: name, values: map[string]T{}}
}

// Register adds v. A second value under the same name is a programming
// error that would silently shadow the first, so it panics at start-up.
func (r *Of[T]) Register(v T) {
	n := r.name(v)
	if _, dup := r.values[n]; dup {
		panic(fmt.Sprintf("duplicate %s %q", r.kind, n))
	}
	r.values[n] = v
}

// Lookup returns the value called name, or an error that lists the valid
// names, so a typo on the command line is answered with the choices.
func (r *Of[T]) Lookup(name string) (T, error) {
	v, ok := r.values[name]
	if !ok {
		return v, fmt.Errorf("unknown %s %q (valid: %v)", r.kind, name, r.Names())
	}
	return v, nil
}

// All returns the values sorted by name, so listings and generated suites
// come out the same on every run.
func (r *Of[T]) All() []T {
	out := make([]T, 0, len(r.values))
	for _, n := range r.Names() {
		out = append(out, r.values[n])
	}
	return out
}

// Names returns the registered names, sorted.
func (r *Of[T]) Names() []string {
	names := make([]string, 0, len(r.values))
	for n := range r.values {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
