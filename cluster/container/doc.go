// Package container runs a cluster's servers in containers: the "docker"
// backend starts each one in a container of its own through
// testcontainers-go, from images built on this machine (docker.go,
// images.go; reaped by labels, a watchdog and a sweep, reap.go), and the
// "compose" backend hands nodes to the slots of a docker-compose topology
// (compose.go). Both register with cluster.RegisterBackend when the package
// is linked in.
//
// It stands apart from cluster so that the Docker client libraries are
// compiled only into what offers --backend docker or compose (cli, runner,
// cmd/locktest): impls and a user's lock, which need cluster to deploy
// servers, do not pull them in.
package container
