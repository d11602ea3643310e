// Package impls holds the lock designs under test. A design is one file: a
// lock.Lock client that a worker process drives, the servers it needs, and
// one registration line. Lock clients report each outcome honestly: a
// definite refusal is wrapped with lock.Definite, anything else is an
// unknown outcome.
//
// It is also the public API for testing your own lock: implement lock.Lock
// (and optionally lock.Renewer, lock.CommandCounter; the lock package
// imports no server code), Register a Design from your own main and call
// cli.Main (docs/go-api.md). Locks in other languages run as the
// exec design, a program speaking the protocol package's JSON lines
// (docs/protocol.md).
package impls
