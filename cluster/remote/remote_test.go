package remote

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/cluster"
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
// with the same pid would not be: its start time differs; a server of the
// user's paused again would) counts again, listed once.
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
		// A server of the user's paused by three strikes, the last
		// never continued; another paused and continued twice.
		{Host: "b", Do: DoCont, Pid: 12, Start: "7", Node: "server-0"},
		{Host: "b", Do: DoCont, Pid: 13, Start: "8", Node: "server-1"},
		{Host: "b", Do: DoCont, Pid: 12, Start: "7", Node: "server-0", Undone: true},
		{Host: "b", Do: DoCont, Pid: 13, Start: "8", Node: "server-1", Undone: true},
		{Host: "b", Do: DoCont, Pid: 12, Start: "7", Node: "server-0"},
		{Host: "b", Do: DoCont, Pid: 13, Start: "8", Node: "server-1"},
		{Host: "b", Do: DoCont, Pid: 12, Start: "7", Node: "server-0", Undone: true},
		{Host: "b", Do: DoCont, Pid: 13, Start: "8", Node: "server-1", Undone: true},
		{Host: "b", Do: DoCont, Pid: 12, Start: "7", Node: "server-0"},
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
	if want := "a/dir/,b/pid/101,a/pid/200,b/cont/7"; strings.Join(keys, ",") != want {
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
	// Not the kill program: procps-ng 4.0.2's takes "-STOP -PGID" for
	// every process the caller may signal.
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
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

// TestGuardScript: the guard of the user's servers continues them once
// its input ends, and only those still the processes adopted (a start
// time that differs is another process that got the pid).
func TestGuardScript(t *testing.T) {
	var pids []int
	var starts []string
	for range 3 {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pid := cmd.Process.Pid
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", fmt.Sprintf(`s=$(cat /proc/%d/stat); set -- ${s##*")"}; echo "${20}"`, pid)).Output()
		if err != nil {
			t.Fatal(err)
		}
		pids, starts = append(pids, pid), append(starts, strings.TrimSpace(string(out)))
	}
	starts[2] = "1" // not the process adopted: left as it is
	guard := exec.Command("sh", "-c", guardScript(pids, starts))
	in, err := guard.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	for _, pid := range pids {
		if st := cluster.ProcState(pid); st != "T" {
			t.Fatalf("pid %d in state %q before the guard's input ended, want T", pid, st)
		}
	}
	in.Close()
	if err := guard.Wait(); err != nil {
		t.Fatalf("guard: %v", err)
	}
	for i, want := range []string{"S", "S", "T"} {
		if st := cluster.ProcState(pids[i]); st != want {
			t.Errorf("pid %d (start %s) in state %q after the guard, want %s", pids[i], starts[i], st, want)
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

// TestNftRules gives the rules a fault writes to a real nft, in a network
// namespace of the test's own, and reads back what nft echoed as it added
// them and what it lists: the handles a heal deletes by must be the ones
// in effect, in the right chains.
func TestNftRules(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatalf("nft (Debian's nftables, which scripts/install-deps installs): %v", err)
	}
	f := &hostFirewall{table: tableName("/tmp/locktest/20261129T040852.361")}
	if !ourTable.MatchString(f.table) {
		t.Fatalf("table %q is not one heal would delete", f.table)
	}
	peer := net.ParseIP("10.73.1.1")
	rules := []struct {
		tag   string
		rule  cluster.PacketRule
		chain string
	}{
		{"c0:redis-0|partition|cut", cluster.PacketRule{Peer: peer, Port: 6379, Verdict: cluster.VerdictDrop, Prob: 1}, "input"},
		{"c0:redis-0|partition|cut", cluster.PacketRule{Out: true, Peer: peer, Port: 6379, Verdict: cluster.VerdictDrop, Prob: 1}, "output"},
		{"peers:etcd-0|loss|loss", cluster.PacketRule{Peer: peer, Port: 2380, Verdict: cluster.VerdictDrop, Prob: 0.25}, "input"},
		{"c1:redis-0|reset-peer|reset", cluster.PacketRule{Out: true, Peer: peer, Port: 6379, Verdict: cluster.VerdictReset, Prob: 1}, "output"},
	}
	tbl := "inet " + f.table
	script := "add table " + tbl + "\n" +
		"add chain " + tbl + " input { type filter hook input priority 0 ; policy accept ; }\n" +
		"add chain " + tbl + " output { type filter hook output priority 0 ; policy accept ; }\n"
	for _, r := range rules {
		script += f.nftRule(r.tag, r.rule)
	}
	cmd := exec.Command("unshare", "-rn", "sh", "-c", "nft --echo --handle -f - && echo LISTING && nft -a list table "+tbl)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nft: %v\n%s\nscript:\n%s", err, out, script)
	}
	echoed, listed, ok := strings.Cut(string(out), "LISTING")
	if !ok {
		t.Fatalf("no listing:\n%s", out)
	}
	got, want := parseRules(echoed), parseRules(listed)
	byHandle := func(a, b listedRule) int { return a.handle - b.handle }
	slices.SortFunc(got, byHandle)
	slices.SortFunc(want, byHandle)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(rules) {
		t.Fatalf("echoed %v, listed %v: want the same %d rules", got, want, len(rules))
	}
	for _, r := range rules {
		if !slices.ContainsFunc(got, func(l listedRule) bool { return l.tag == r.tag && l.chain == r.chain && l.handle > 0 }) {
			t.Errorf("rule %s in chain %s: not listed (%v)", r.tag, r.chain, got)
		}
	}
	for _, want := range []string{"tcp dport 6379 drop", "tcp sport 6379 drop", "numgen random mod 10000 < 2500", "reject with tcp reset"} {
		if !strings.Contains(listed, want) {
			t.Errorf("listing lacks %q:\n%s", want, listed)
		}
	}
}

// TestExpandHosts: @FILE stands for the hosts the file names, one a line.
func TestExpandHosts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hosts := write("hosts", "# the staging cluster\nroot@10.0.0.1\n\n  10.0.0.2:2222  \n")
	empty := write("empty", "# nothing yet\n\n")
	for _, tc := range []struct {
		in   []string
		want string
		err  string
	}{
		{in: []string{"n1", "n2"}, want: "[n1 n2]"},
		{in: []string{"@" + hosts}, want: "[root@10.0.0.1 10.0.0.2:2222]"},
		{in: []string{"n0", "@" + hosts}, want: "[n0 root@10.0.0.1 10.0.0.2:2222]"},
		{in: []string{"@" + empty}, err: "the file names no host"},
		{in: []string{"@" + dir + "/missing"}, err: "no such file"},
	} {
		got, err := ExpandHosts(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ExpandHosts(%q): %v, want an error saying %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || fmt.Sprint(got) != tc.want):
			t.Errorf("ExpandHosts(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestLaunchScript runs the start and setup scripts with real sh here, as a
// host runs them. This process is made a subreaper that reaps nothing, as
// an init that reaps late (or never: sshd as a container's first process)
// would: a killed server must be gone at once all the same, reaped by the
// shell that waits for it, or PostgreSQL would not start again.
func TestLaunchScript(t *testing.T) {
	if err := cluster.BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l := launch{dir: dir, bin: "sleep", args: []string{"60"}, out: "server.out"}
	out, err := exec.Command("sh", "-c", l.startScript()).Output()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	f := strings.Fields(string(out))
	pidFile, _ := os.ReadFile(filepath.Join(dir, "server.pid"))
	if len(f) != 2 || strings.TrimSpace(string(pidFile)) != f[0]+" "+f[1] {
		t.Fatalf("start answered %q, server.pid %q: want the same PID START", out, pidFile)
	}
	pid, _ := strconv.Atoi(f[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for fileExists(fmt.Sprintf("/proc/%d", pid)) {
		if time.Now().After(deadline) {
			t.Fatalf("killed server %d in state %q 2 s later, want reaped", pid, cluster.ProcState(pid))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A setup: its output and exit status come back, server.pid goes; as
	// root it runs as its user, in an IPC namespace of its own.
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	wantUID, ownIPC := nobody.Uid, true
	if os.Geteuid() != 0 {
		wantUID, ownIPC = strconv.Itoa(os.Geteuid()), false
	}
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	l = launch{dir: dir, bin: "sh", args: []string{"-c", "id -u; readlink /proc/self/ns/ipc; exit 3"}, out: setupOut,
		runAs: "nobody", privateIPC: true, setup: true}
	out, err = exec.Command("sh", "-c", l.setupScript()).Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("setup: %v, want exit status 3", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 || lines[0] != wantUID || (lines[1] != hostIPC) == !ownIPC {
		t.Errorf("setup answered %q: want uid %s and an IPC namespace of its own %v (this one's: %s)", out, wantUID, ownIPC, hostIPC)
	}
	if fileExists(filepath.Join(dir, "server.pid")) {
		t.Error("server.pid left after the setup")
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
