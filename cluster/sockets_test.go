package cluster

import (
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestShutdownConnectionsTo shuts down this process's connection to one
// listener and leaves its connection to another alone: the far end of the
// first sees the hang-up, the second still carries bytes.
func TestShutdownConnectionsTo(t *testing.T) {
	listen := func() (net.Listener, int) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l, l.Addr().(*net.TCPAddr).Port
	}
	target, targetPort := listen()
	other, _ := listen()
	dial := func(l net.Listener) (net.Conn, net.Conn) {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); s.Close() })
		return c, s
	}
	_, cutServer := dial(target)
	keptClient, keptServer := dial(other)

	n, err := shutdownConnectionsTo(os.Getpid(), targetPort)
	if err != nil || n != 1 {
		t.Fatalf("shut down %d connections (%v), want 1", n, err)
	}
	cutServer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := cutServer.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("far end of the shut connection read %v, want EOF", err)
	}
	if _, err := keptClient.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	keptServer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := keptServer.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the other connection was harmed: %v", err)
	}
}
