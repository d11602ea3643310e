// Package runner runs one scenario end to end: it starts the design's
// servers (or takes the user's, --servers) and the resource, spawns the
// worker processes, drives the faults, writes the history, checks it and
// writes the report. It also holds the worker side of the
// coordinator–worker protocol.
package runner
