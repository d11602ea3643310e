package cluster

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line, until the test ends.
func echoServer(t *testing.T) string { return heardEchoServer(t, nil) }

// heardEchoServer is an echo server that sends the time it read each line
// on heard (when not nil): when a request reached the server.
func heardEchoServer(t *testing.T, heard chan<- time.Time) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadBytes('\n')
					if err != nil {
						return
					}
					if heard != nil {
						heard <- time.Now()
					}
					if _, err := c.Write(line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dialLink opens a connection through l and checks that it echoes.
func dialLink(t *testing.T, l *Link) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	if got := roundTrip(t, c, br); got != "ping\n" {
		t.Fatalf("echo through %s: %q", l.Name, got)
	}
	return c, br
}

// roundTrip sends a line and returns what came back: the line, or "" when
// the connection ended first.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader) string {
	t.Helper()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return ""
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return ""
	}
	return line
}

// Every effect acts on a connection opened before it was added, as on one
// opened while it is in effect: clients keep their connections pooled, so a
// fault that reached only new ones would mostly miss.
func TestLinkEffectsReachOpenConnections(t *testing.T) {
	c := New(t.TempDir())
	defer c.Stop()
	l, err := c.Link("c0:echo", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("latency", func(t *testing.T) {
		conn, br := dialLink(t, l)
		const delay = 100 * time.Millisecond
		if err := l.Latency("test", Requests, delay, 0); err != nil {
			t.Fatal(err)
		}
		defer l.Heal("test")
		start := time.Now()
		if got := roundTrip(t, conn, br); got != "ping\n" {
			t.Fatalf("echo under latency: %q", got)
		}
		if took := time.Since(start); took < delay {
			t.Errorf("round trip on a connection opened before the latency took %v, under the %v added", took, delay)
		}
		later, laterBr := dialLink(t, l)
		start = time.Now()
		if got := roundTrip(t, later, laterBr); got != "ping\n" || time.Since(start) < delay {
			t.Errorf("a connection opened under the latency: %q in %v", got, time.Since(start))
		}
	})

	t.Run("cut", func(t *testing.T) {
		conn, br := dialLink(t, l)
		if err := l.Cut("test"); err != nil {
			t.Fatal(err)
		}
		defer l.Heal("test")
		if _, err := conn.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		// Healing a cut closes its connections: the echo of a line sent
		// across the cut must never arrive.
		if err := l.Heal("test"); err != nil {
			t.Fatal(err)
		}
		if line, err := br.ReadString('\n'); err == nil {
			t.Fatalf("a line crossed the cut: %q", line)
		}
	})

	t.Run("reset", func(t *testing.T) {
		conn, br := dialLink(t, l)
		if err := l.Reset("test"); err != nil {
			t.Fatal(err)
		}
		defer l.Heal("test")
		if got := roundTrip(t, conn, br); got != "" {
			t.Fatalf("a reset link echoed %q", got)
		}
	})

	dialLink(t, l) // healed: new connections work
}

// TestLatencyStreams: latency on requests delays what reaches the server;
// on replies the server hears at once and the client learns late.
func TestLatencyStreams(t *testing.T) {
	c := New(t.TempDir())
	defer c.Stop()
	heard := make(chan time.Time, 16)
	l, err := c.Link("c0:echo", heardEchoServer(t, heard))
	if err != nil {
		t.Fatal(err)
	}
	conn, br := dialLink(t, l)
	<-heard
	const delay = 200 * time.Millisecond
	for _, tc := range []struct {
		stream     Stream
		serverLate bool
	}{{Requests, true}, {Replies, false}} {
		if err := l.Latency("test", tc.stream, delay, 0); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if got := roundTrip(t, conn, br); got != "ping\n" {
			t.Fatalf("%s: echo under latency: %q", tc.stream, got)
		}
		took, atServer := time.Since(start), (<-heard).Sub(start)
		if err := l.Heal("test"); err != nil {
			t.Fatal(err)
		}
		if took < delay {
			t.Errorf("%s: round trip %v, under the %v added", tc.stream, took, delay)
		}
		if late := atServer >= delay; late != tc.serverLate {
			t.Errorf("%s: the request reached the server after %v (delay %v)", tc.stream, atServer, delay)
		}
	}
}
