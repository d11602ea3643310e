// Package tests holds the integration tests: they build the locktest
// binary once and run it as a user would, against real servers and real
// signals, then check its exit code, its stored results, and that nothing
// it started is left running.
package tests
