package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// RemoveData deletes the servers' data under the cluster's directory and
// keeps their logs and configuration files: a node's subdirectories (the
// data directories of etcd, ZooKeeper and PostgreSQL; etcd alone
// preallocates 3 × 64 MB of write-ahead log per cluster member, and etcd
// 3.4 has no flag to make its segments smaller) and Redis's persistence
// files. Call it after Stop.
func (c *Cluster) RemoveData() error {
	var errs []error
	for _, n := range c.Nodes() {
		if n.Dir == "" {
			continue // a user's server (Adopt): its data is not the run's
		}
		entries, err := os.ReadDir(n.Dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || strings.HasSuffix(name, ".aof") || strings.HasSuffix(name, ".rdb") {
				errs = append(errs, os.RemoveAll(filepath.Join(n.Dir, name)))
			}
		}
	}
	return errors.Join(errs...)
}
