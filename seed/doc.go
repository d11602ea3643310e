// Package seed turns a run's one --seed into independent random streams.
//
// Every random choice of a run (a fault's schedule, a client's keys and hold
// times, a lock client's retry sleeps, explore's search) draws from a stream
// named by a domain and an index. Streams of different (domain, index) pairs
// never share a PCG state, so client c's workload and client c+1's lock can
// no longer draw the same sequence, and adding a stream to one domain does
// not shift the draws of another.
package seed
