package tests

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/cluster"
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
// the kernel makes is refused on the proxy, before anything starts; with
// no --network a run is in the lab. Cost: about 20 s.
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

	// The default is the lab, where the machine allows it (here: root),
	// and the summary says so.
	r = locktest(t, "run", "--impl", "redis-single", "--clients", "3", "--duration", "2s", "--fault", "partition",
		"--fault-interval", "500ms", "--fault-duration", "500ms")
	r.assertNothingLeft(t)
	if network, note := storedNetwork(t, r); network != "netns" || note != "" || !strings.Contains(r.stdout, "network netns)") {
		t.Errorf("default run: exit %d, network %q (%q); want netns, said in the summary:\n%s", r.code, network, note, r.stdout)
	}

	r = locktest(t, "run", "--impl", "redis-single", "--fault", "loss", "--network", "proxy")
	if r.code != 254 || !strings.Contains(r.stderr, "--network netns") {
		t.Errorf("loss on the proxy: exit %d, %q; want 254 naming --network netns", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(r.store, "latest")); err == nil {
		t.Error("a refused run left a run directory")
	}
}

var labKills = flag.Int("lab-kills", 6, "SIGKILLs of a netns run's coordinator TestLabSurvivesKills makes (docs/network.md's campaign: 20)")

// TestLabSurvivesKills SIGKILLs the coordinator of a --network netns run
// at moments spread over its life (making its lab, starting servers, with
// clients running, during a partition, while checking), alternately the
// command the user ran and the coordinator it re-ran in its lab. Each
// time, the host's interfaces, namespaces and firewall are as before and
// no process of the run is left. Cost: about 3 s a kill.
func TestLabSurvivesKills(t *testing.T) {
	before, err := cluster.HostNetwork()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(28, 20))
	for i := range *labKills {
		// A run of 4 s lives about 5 s here: every kill lands inside it.
		delay := time.Duration(rng.Int64N(int64(4800 * time.Millisecond))).Round(time.Millisecond)
		inner := i%2 == 1
		t.Run(fmt.Sprintf("%02d-after-%s-inner-%v", i, delay, inner), func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			cmd := exec.Command(binary, "run", "--impl", "redis-single", "--network", "netns", "--fault", "partition",
				"--fault-interval", "1s", "--fault-duration", "1s", "--duration", "4s", "--store", store)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
				t.Logf("the run ended before the kill at %s", delay)
			case <-time.After(delay):
				victim := cmd.Process.Pid
				if c, ok := childRunning(victim, binary); inner && ok {
					victim = c
				}
				if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				t.Logf("SIGKILLed %d (inner %v) at %s", victim, victim != cmd.Process.Pid, delay)
				<-exited
			}
			assertNothingLeft(t, store, binary)
			deadline := time.Now().Add(10 * time.Second)
			for {
				after, err := cluster.HostNetwork()
				if err != nil {
					t.Fatal(err)
				}
				if after == before {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("10 s after the kill the host's network differs:\n%s", after)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// childRunning finds a child of parent running bin: the coordinator a
// netns run re-ran in its lab.
func childRunning(parent int, bin string) (int, bool) {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), bin+"\x00") {
			continue
		}
		// stat: pid (comm) state ppid …; comm may hold spaces.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) {
			return pid, true
		}
	}
	return 0, false
}
