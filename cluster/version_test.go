package cluster

import (
	"regexp"
	"testing"
)

// TestServerVersions asks the installed servers for their versions; a
// missing server is left out rather than failing the run.
func TestServerVersions(t *testing.T) {
	got := ServerVersions([]string{"redis-server", "etcd", "postgres", "pgbouncer", "mariadbd", "java", "cc",
		"/no/such/program"})
	dotted := regexp.MustCompile(`^\d+\.\d+(\.\d+)*$`)
	for _, name := range []string{"redis-server", "etcd", "postgres", "pgbouncer", "mariadbd", "zookeeper"} {
		if v, ok := got[name]; !ok || !dotted.MatchString(v) {
			t.Errorf("%s: version %q (found %v), want a dotted number", name, v, ok)
		}
	}
	if len(got) != 6 {
		t.Errorf("versions %v: want the six servers only", got)
	}
}
