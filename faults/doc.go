// Package faults is the nemesis: real faults (signals, proxies or firewall
// rules, clocks) started and stopped on a schedule derived from the run's
// seed. Every start and stop is recorded in the history, and every fault
// heals what it did before Run returns, so a run always ends quiet.
//
// A new fault is one file: a type with Name, Description, Applies, Run and
// Traits, registered from init. Traits is all the rest of locktest knows of
// it: whom it aims at (the history's fault-start records carry that to the
// efficacy check), its targets, what it does to servers and links, its size
// and how sweeps and searches turn it, and the settings under which it
// cannot act (Warn). No other package names a fault.
package faults
