package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// TestFencingApplies: a fencing other than the default is refused, with
// one line, where no resource node would check a token: it would change
// nothing while the run said it did.
func TestFencingApplies(t *testing.T) {
	for _, tc := range []struct {
		impl, workload, fencing string
		want                    string // "" accepted
	}{
		{"redis-single-fenced", "counter", workloads.FenceWrites, ""},
		{"exec", "counter", workloads.FenceWrites, ""},
		{"redis-single", "counter", workloads.FenceReadsWrites, ""},
		{"redis-single-fenced", "mutex", workloads.FenceWrites, "workload mutex protects no resource"},
		{"etcd-txn", "counter", workloads.FenceWrites, "keeps the data in its own guarded transactions"},
		{"redis-single", "counter", workloads.FenceWrites, "impl redis-single hands out no fencing tokens"},
	} {
		cfg := scenario.Defaults()
		cfg.Impl, cfg.Workload, cfg.Fencing = tc.impl, tc.workload, tc.fencing
		if tc.impl == "exec" {
			cfg.ExecCmd, cfg.ExecServers = "python3 client.py", "redis-single"
		}
		_, err := Resolve(cfg)
		var bad *BadConfigError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s --fencing %s: %v", tc.impl, tc.workload, tc.fencing, err)
		case tc.want != "" && (!errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s %s --fencing %s: %v, want one line saying %q", tc.impl, tc.workload, tc.fencing, err, tc.want)
		}
	}
}
