// Package scenario is the vocabulary of a run: its settings (Config, the
// Settings table that makes them flags, suite fields and config.json) and
// reading a stored run's config.json. It is apart from runner so that what
// only reads runs (serve, analyze's callers, reports) does not pull in the
// machinery that starts servers and faults.
package scenario
