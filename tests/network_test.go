package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/scenario"
)

// storedNetwork reads what the latest run's config.json says of its
// network.
func storedNetwork(t *testing.T, r result) (network, note string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.store, "latest", scenario.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Network     string `json:"network"`
		NetworkNote string `json:"network_note"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.Network, c.NetworkNote
}

// TestNetworkChoice: a run with --network netns partitions the holder in
// a lab and gives a verdict, with every fault healed, nothing left, and
// config.json saying netns; a delay fault needs the proxy, so a netns run
// with one uses it, and says so on stderr and in config.json; a fault only
// the kernel makes is refused without netns, before anything starts.
// Cost: about 15 s (two 4 s runs).
func TestNetworkChoice(t *testing.T) {
	run := []string{"run", "--impl", "redis-single", "--workload", "counter", "--clients", "3", "--duration", "4s",
		"--fault-interval", "1s", "--fault-duration", "1s", "--network", "netns"}
	r := locktest(t, append(run, "--fault", "partition", "--fault-target", "holder", "--fault-moment", "grant")...)
	r.assertNothingLeft(t)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("netns run: exit %d, want a verdict", r.code)
	}
	res := r.results(t)
	if res.Verdict == "" || len(res.Checks.Faults) == 0 {
		t.Fatalf("netns run: verdict %q after %d fault(s)", res.Verdict, len(res.Checks.Faults))
	}
	assertHealed(t, res.Checks.Faults)
	if network, note := storedNetwork(t, r); network != "netns" || note != "" {
		t.Errorf("netns run: config.json says network %q (%q)", network, note)
	}

	r = locktest(t, append(run, "--fault", "latency")...)
	r.assertNothingLeft(t)
	network, note := storedNetwork(t, r)
	if r.code != 0 || network != "proxy" || !strings.Contains(note, "latency") || !strings.Contains(r.stderr, note) ||
		!strings.Contains(r.stdout, note) {
		t.Errorf("latency with netns: exit %d, network %q, note %q; want the proxy, said on stderr, in the summary and in config.json",
			r.code, network, note)
	}

	r = locktest(t, "run", "--impl", "redis-single", "--fault", "loss")
	if r.code != 254 || !strings.Contains(r.stderr, "--network netns") {
		t.Errorf("loss on the proxy: exit %d, %q; want 254 naming --network netns", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(r.store, "latest")); err == nil {
		t.Error("a refused run left a run directory")
	}
}
