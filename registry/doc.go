// Package registry is the by-name table that designs, faults, workloads and
// backends register into from init: one implementation, so that the four
// command-line vocabularies refuse a duplicate and answer an unknown name
// the same way.
package registry
