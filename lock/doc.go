// Package lock is the contract between locktest and a lock client: the Lock
// interface and its optional extensions (Renewer, GuardedStore,
// CommandCounter), the Grant an acquire returns, the outcome markers
// (Definite, Broken) the history is built from, the Config a worker hands a
// client, and the checkpoints a fault can stop a client at.
//
// It stands apart from impls, which holds the registry and the built-in
// designs, because impls starts servers: it pulls in the cluster package and
// the Redis, etcd, ZooKeeper, PostgreSQL and MySQL clients. A lock written against
// docs/go-api.md needs none of that to compile, test or vendor its client,
// so this package imports only the standard library and the clock package
// (itself pure). Keep it that way: nothing here may import server, container
// or store-client code. Registering a design (impls.Register) and starting
// its servers (impls.Design.Deploy) are the coordinator's side and live in
// impls.
package lock
