// Package workloads holds what each client does in its loop and the
// protected resource it guards. A workload records every operation it
// invokes and how it completed; it runs inside a worker process.
package workloads
