// Package cli is the locktest command line: run with its progress display,
// explore, envelope, analyze, compare, serve, suite, list, images, version,
// shell completion, and the hidden commands the coordinator runs its own
// binary as (worker, the docker watchdog, a container's node). It is built
// on cobra, so that flags go anywhere and every command has its own help
// and completion. It is importable so that a user's own main package can
// register a lock design and then hand over to Main; cmd/locktest is just
// that call with the built-in designs.
package cli

//go:generate go run ./gendocs ../docs/cli
