// Package cli is the locktest command line (run with its progress
// display, analyze, compare, serve, suite, list and the hidden worker). It is importable so that a user's own main package can
// register a lock design and then hand over to Main; cmd/locktest is just
// that call with the built-in designs.
package cli
