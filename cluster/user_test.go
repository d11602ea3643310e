package cluster

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestParseUserServers(t *testing.T) {
	cases := []struct {
		addrs []string
		pids  []string
		want  string // "" = accepted
	}{
		{[]string{"127.0.0.1:6379"}, nil, ""},
		{[]string{"127.0.0.1:6379", "[::1]:6380", "db.example.com:7000"}, []string{"10", "11", "12"}, ""},
		{[]string{"127.0.0.1"}, nil, "not host:port"},
		{[]string{"127.0.0.1:0"}, nil, "port from 1 to 65535"},
		{[]string{"127.0.0.1:65536"}, nil, "port from 1 to 65535"},
		{[]string{"127.0.0.1:redis"}, nil, "port from 1 to 65535"},
		{[]string{":6379"}, nil, "port from 1 to 65535"},
		{[]string{"127.0.0.1:6379", "127.0.0.1:6379"}, nil, "given twice"},
		{[]string{"127.0.0.1:6379", "127.0.0.1:6380"}, []string{"10"}, "1 pid(s) for 2 server(s)"},
		{[]string{"127.0.0.1:6379"}, []string{"1"}, "no server's process id"},
		{[]string{"127.0.0.1:6379"}, []string{"-5"}, "no server's process id"},
		{[]string{"127.0.0.1:6379"}, []string{"redis"}, "no server's process id"},
	}
	for _, tc := range cases {
		got, err := ParseUserServers(tc.addrs, tc.pids)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %v: %v", tc.addrs, tc.pids, err)
		case tc.want == "" && (len(got) != len(tc.addrs) || (tc.pids != nil && strconv.Itoa(got[len(got)-1].Pid) != tc.pids[len(tc.pids)-1])):
			t.Errorf("%v %v: parsed %+v", tc.addrs, tc.pids, got)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %v: error %v, want one saying %q", tc.addrs, tc.pids, err, tc.want)
		}
	}
}

// userProcessUnderTest starts a process standing for a user's server,
// holding the listening socket it returns: it is not the cluster's, so the
// test must end it.
func userProcessUnderTest(t *testing.T) (*exec.Cmd, net.Listener) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "60")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, l
}

func TestUserServerCheck(t *testing.T) {
	cmd, l := userProcessUnderTest(t)
	ok := UserServer{Addr: l.Addr().String(), Pid: cmd.Process.Pid}
	if err := ok.Check(context.Background()); err != nil {
		t.Fatalf("a listening server and a live pid: %v", err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	if err := (UserServer{Addr: closedAddr}).Check(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("nothing listening: %v", err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := (UserServer{Addr: ok.Addr, Pid: gone.Process.Pid}).Check(context.Background()); err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Errorf("a pid that exited: %v", err)
	}
	if err := (UserServer{Addr: ok.Addr, Pid: os.Getppid()}).Check(context.Background()); err == nil || !strings.Contains(err.Error(), "does not listen on "+ok.Addr) {
		t.Errorf("a live pid that is not the server's: %v", err)
	}
	if err := syscall.Kill(ok.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(ok.Pid, syscall.SIGCONT)
	waitFor(t, "SIGSTOP to stop the process", func() bool { return pidStopped(ok.Pid) })
	if err := ok.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "stopped already") {
		t.Errorf("a stopped process: %v", err)
	}
}

// TestAdoptedServer: a user's server can be paused and continued; Kill,
// Stop and the cluster's end leave it running, and Start refuses.
func TestAdoptedServer(t *testing.T) {
	cmd, l := userProcessUnderTest(t)
	pid := cmd.Process.Pid
	c := New(t.TempDir())
	nodes, err := c.Adopt(context.Background(), []UserServer{{Addr: l.Addr().String(), Pid: pid}}, []string{RoleLock})
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if n.Name != "server-0" || n.Addr() != l.Addr().String() || n.Role() != RoleLock {
		t.Fatalf("node %s at %s, role %s", n.Name, n.Addr(), n.Role())
	}
	if err := n.Process().Pause(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Pause to stop the process", n.Process().Stopped)
	if err := n.Kill(); err == nil || !strings.Contains(err.Error(), "does not kill") {
		t.Errorf("Kill of a user's server: %v", err)
	}
	waitFor(t, "Kill to continue the user's server", func() bool { return !n.Process().Stopped() })
	if err := n.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "does not start") {
		t.Errorf("Start of a user's server: %v", err)
	}
	if err := n.Process().Pause(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cluster's Stop to continue the user's server", func() bool { return !pidStopped(pid) })
	if exited, _ := n.Process().Exited(); exited || syscall.Kill(pid, 0) != nil {
		t.Fatal("the user's server did not survive the run")
	}
	if err := c.RemoveData(); err != nil {
		t.Fatalf("RemoveData with a user's server: %v", err)
	}
}

// TestAdoptWithoutPids: without pids nothing can be paused, and nothing
// guards.
func TestAdoptWithoutPids(t *testing.T) {
	_, l := userProcessUnderTest(t)
	c := New(t.TempDir())
	nodes, err := c.Adopt(context.Background(), []UserServer{{Addr: l.Addr().String()}}, []string{RoleLock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err := nodes[0].Process().Pause(); err == nil || !strings.Contains(err.Error(), "no pid given") {
		t.Errorf("Pause without a pid: %v", err)
	}
	if c.guard != nil {
		t.Error("a guard started with no pid to continue")
	}
}

// TestListensOn: a pid is taken for a server's only if the process holds a
// socket listening on the server's address, on its IP or the wildcard.
func TestListensOn(t *testing.T) {
	listen := func(addr string) string {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", addr, err)
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().String()
	}
	v4, any4 := listen("127.0.0.1:0"), listen("0.0.0.0:0")
	_, anyPort, _ := net.SplitHostPort(any4)
	type row struct {
		name string
		pid  int
		addr string
		want bool
	}
	cases := []row{
		{"its loopback listener", os.Getpid(), v4, true},
		{"its wildcard listener, by loopback", os.Getpid(), "127.0.0.1:" + anyPort, true},
		{"its wildcard listener, by name", os.Getpid(), "localhost:" + anyPort, true},
		{"another process", os.Getppid(), v4, false},
		{"a port nobody listens on", os.Getpid(), "127.0.0.1:1", false},
	}
	if v6 := listenV6(t); v6 != "" {
		cases = append(cases, row{"its IPv6 loopback listener", os.Getpid(), v6, true})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := listensOn(context.Background(), tc.pid, tc.addr)
			if err != nil || got != tc.want {
				t.Fatalf("listensOn(%d, %s) = %v, %v; want %v", tc.pid, tc.addr, got, err, tc.want)
			}
		})
	}
}

// listenV6 listens on [::1] for the test, or returns "" without IPv6.
func listenV6(t *testing.T) string {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}
