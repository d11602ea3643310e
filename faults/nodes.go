package faults

import (
	"strings"

	"github.com/locktest/locktest/cluster"
)

// nodeNames names a set of servers for the history.
func nodeNames(nodes []*cluster.Node) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return strings.Join(names, ",")
}
