// Package history is the run's record: every operation and fault event as
// JSON Lines, written and flushed as it happens, so that a run killed midway
// still leaves a file that can be read and checked.
//
// An operation is an invoke record followed by one completion (ok, fail or
// info) with the same process and seq. fail means the operation definitely
// did not take effect; info means it may or may not have.
package history
