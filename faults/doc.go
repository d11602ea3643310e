// Package faults is the nemesis: real faults (signals, proxies, clocks)
// started and stopped on a schedule derived from the run's seed. Every
// start and stop is recorded in the history, and every fault heals what it
// did before Run returns, so a run always ends quiet.
package faults
