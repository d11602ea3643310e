package remote

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseHost(t *testing.T) {
	for _, tc := range []struct {
		spec, user, host, addr, err string
	}{
		{spec: "n1", user: "me", host: "n1", addr: "n1:22"},
		{spec: "root@n1", user: "root", host: "n1", addr: "n1:22"},
		{spec: "root@10.0.0.1:2222", user: "root", host: "10.0.0.1", addr: "10.0.0.1:2222"},
		{spec: "[::1]:2200", user: "me", host: "::1", addr: "[::1]:2200"},
		{spec: "n1:x", err: `port "x" is not a port`},
		{spec: "n1:70000", err: "is not a port"},
		{spec: "root@", err: "is not a host"},
		{spec: "", err: "is not a host"},
	} {
		user, host, addr, err := parseHost(tc.spec, "me")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseHost(%q): error %v, want one saying %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || user != tc.user || host != tc.host || addr != tc.addr {
			t.Errorf("parseHost(%q) = %q, %q, %q, %v; want %q, %q, %q", tc.spec, user, host, addr, err, tc.user, tc.host, tc.addr)
		}
	}
	if err := ParseHosts([]string{"a", "root@a:22"}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("the same host twice: %v, want refused", err)
	}
}

// TestQuote runs each quoted string through sh: it must come back as it
// went in, whatever it holds.
func TestQuote(t *testing.T) {
	for _, s := range []string{"plain", "", "two words", "it's", `a"b`, "$HOME", "`id`", "a\nb", "x;rm -rf /", "--dir=/tmp/a b"} {
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("Quote(%q) = %s: sh printed %q (%v)", s, Quote(s), out, err)
		}
	}
}

// TestPending: what is undone drops out of the list, a cut-off last line
// is ignored, and an act done again after its undoing (a node restarted
// with the same pid would not be: its start time differs) counts again.
func TestPending(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{
		{Host: "a", Do: DoDir, Path: "/tmp/locktest/r"},
		{Host: "a", Do: DoPid, Pid: 10, Start: "100", Node: "redis-0"},
		{Host: "b", Do: DoPid, Pid: 11, Start: "101", Node: "redis-1"},
		{Host: "a", Do: DoPid, Pid: 10, Start: "100", Node: "redis-0", Undone: true},
		{Host: "a", Do: DoPid, Pid: 10, Start: "200", Node: "redis-0"},
	} {
		if err := j.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	got, err := Pending(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Host+"/"+e.Do+"/"+e.Start)
	}
	if want := "a/dir/,b/pid/101,a/pid/200"; strings.Join(keys, ",") != want {
		t.Errorf("pending %s, want %s", strings.Join(keys, ","), want)
	}
	if got, err := Pending(t.TempDir()); err != nil || got != nil {
		t.Errorf("no list: %v, %v; want nothing", got, err)
	}
}

func TestOffsetString(t *testing.T) {
	for _, tc := range []struct {
		o    Offset
		want string
	}{
		{Offset{Host: "n1", When: "start", Offset: 1500 * time.Microsecond, Uncertainty: 200 * time.Microsecond},
			"clock of host n1 at start: +1.500 ms from the control host's, ± 0.200 ms"},
		{Offset{Host: "n2", When: "end", Offset: -3 * time.Millisecond, Uncertainty: time.Millisecond},
			"clock of host n2 at end: -3.000 ms from the control host's, ± 1.000 ms"},
		{Offset{Host: "n3", When: "end", Err: "connection closed"}, "clock of host n3 at end: not measured: connection closed"},
	} {
		if got := tc.o.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.o, got, tc.want)
		}
	}
}

// TestKillScript runs the script heal and Kill send to hosts with this
// machine's sh, on a process group of its own: a start time that is not
// the process's spares it (its pid went to another process), the right
// one kills its whole group, stopped or not.
func TestKillScript(t *testing.T) {
	cmd := exec.Command("setsid", "sh", "-c", "sleep 60 & sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	out, err := exec.Command("sh", "-c", fmt.Sprintf(`s=$(cat /proc/%d/stat); set -- ${s##*")"}; echo "${20}"`, pid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	start := strings.TrimSpace(string(out))
	// Both sleeps are in the group before it is stopped.
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-g", fmt.Sprint(pid), "sleep").Output()
		if strings.Count(string(out), "\n") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group of %d has sleeps %q", pid, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := exec.Command("kill", "-STOP", "-"+fmt.Sprint(pid)).Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		start string
		alive bool
	}{{"1", true}, {start, false}} {
		if out, err := exec.Command("sh", "-c", killScript(pid, tc.start)).CombinedOutput(); err != nil {
			t.Fatalf("kill script: %v: %s", err, out)
		}
		if !tc.alive {
			_ = cmd.Wait()
		}
		if alive := groupAlive(pid); alive != tc.alive {
			t.Errorf("start time %s: group alive %v, want %v", tc.start, alive, tc.alive)
		}
	}
}

// groupAlive reports whether a process of group pgid lives (a zombie, dead
// and not yet reaped, does not).
func groupAlive(pgid int) bool {
	out, _ := exec.Command("pgrep", "-g", fmt.Sprint(pgid)).Output()
	for _, p := range strings.Fields(string(out)) {
		stat, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue
		}
		if rest := string(stat)[strings.LastIndexByte(string(stat), ')')+1:]; !strings.HasPrefix(strings.TrimSpace(rest), "Z") {
			return true
		}
	}
	return false
}
