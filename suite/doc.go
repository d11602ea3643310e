// Package suite runs a file of scenarios with expected outcomes, the way CI
// uses locktest: it loads and validates a YAML suite (every error names its
// file, line and field), expands its matrix of designs × faults, runs each
// scenario × seed with bounded parallelism, judges each run against its
// expectation and writes the suite's summary and JUnit XML beside the run
// directories. A suite can be split into shards that CI jobs run apart,
// and their outputs merged back into the reports of one whole run.
package suite
