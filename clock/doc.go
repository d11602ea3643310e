// Package clock gives every process of a run one timeline and gives lock
// clients a clock that a fault can skew.
//
// All processes stamp events with CLOCK_MONOTONIC, which the kernel shares
// across processes on a host; Go's own monotonic reading is per process and
// cannot be merged across workers.
package clock
