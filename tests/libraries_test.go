package tests

import (
	"strings"
	"testing"

	"github.com/locktest/locktest/checker"
)

// TestLibraries runs the locks teams ship, each its own library behind the
// protocol (clients/), plus PostgreSQL's advisory lock: all keep mutual
// exclusion while nothing goes wrong. A holder paused past the TTL loses
// updates on the leased ones (redis-py's key expires; Kazoo's and Curator's
// ZooKeeper session expires and the znode with it, the client is not told);
// the advisory lock has no lease, so the paused holder's connection keeps it
// and nobody else gets in. Measured over seeds 1–5 (suites/libraries.yaml).
func TestLibraries(t *testing.T) {
	cases := []runCase{}
	for _, tc := range []struct {
		impl  string
		pause checker.Verdict
	}{
		{"lib:redis-py", checker.Invalid},
		{"lib:kazoo", checker.Invalid},
		{"lib:curator", checker.Invalid},
		{"postgres-advisory", checker.Valid},
		// One library over several backends: the same code, safe or not
		// by what holds its lock.
		{"lib:tooz-redis", checker.Invalid},
		{"lib:tooz-zookeeper", checker.Invalid},
		{"lib:tooz-postgresql", checker.Valid},
		{"lib:tooz-mysql", checker.Valid},
		{"lib:tooz-memcached", checker.Invalid},
	} {
		code := 0
		if tc.pause == checker.Invalid {
			code = 1
		}
		// memcached keeps expiry times in whole seconds: a 1 s lease may
		// end at once (row 27), so its control run leases for longer.
		var none []string
		if tc.impl == "lib:tooz-memcached" {
			none = []string{"--ttl", "3s"}
		}
		cases = append(cases,
			runCase{row: "libraries", impl: tc.impl, fault: "none", args: none, code: 0, mutex: checker.Valid, data: checker.Valid},
			runCase{row: "libraries", impl: tc.impl, fault: "pause-holder", code: code, data: tc.pause})
	}
	runScenarios(t, cases, "6s")
}

// TestLibrariesListedAndChecked: locktest list impls names each library's
// installed version, and a lib: design whose client cannot be found is
// refused before anything starts.
func TestLibrariesListedAndChecked(t *testing.T) {
	r := locktest(t, "list", "impls")
	for _, want := range []string{"lib:redis-py", "python3-redis ", "lib:kazoo", "python3-kazoo ", "lib:curator",
		"libcurator-recipes-java ", "lib:tooz-redis", "lib:tooz-etcd3", "python3-tooz "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("locktest list impls lacks %q", want)
		}
	}
	t.Setenv("LOCKTEST_CLIENTS", t.TempDir())
	r = locktest(t, "run", "--impl", "lib:redis-py", "--duration", "1s")
	if r.code != 254 || !strings.Contains(r.stderr, "LOCKTEST_CLIENTS") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("exit %d, stderr %q: want 254 and one line naming LOCKTEST_CLIENTS", r.code, r.stderr)
	}
	r.assertNothingLeft(t)
}
