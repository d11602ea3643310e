package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeArgs: bad input to serve is one line and exit 254 before it
// listens; a cancelled context (Ctrl-C) ends it with 130.
func TestServeArgs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	store := t.TempDir()
	file := filepath.Join(store, "file")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(store, "missing")}, "no such file or directory"},
		{[]string{file}, "not a directory"},
		{[]string{store, store}, "give one store directory, not 2"},
		{[]string{store, "--addr", ln.Addr().String()}, "address already in use"},
		{[]string{store, "--addr", "nowhere"}, "--addr"},
		{[]string{"--port", "1"}, "unknown flag --port"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"serve"}, tc.args...), &stdout, &stderr)
		if out := stderr.String(); code != exitBadArgs || strings.Count(out, "\n") != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want 254 and one line saying %q", tc.args, code, out, tc.want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var stderr bytes.Buffer
	if code := serveStore(ctx, []string{store}, "127.0.0.1:0", &stderr); code != exitInterrupted {
		t.Errorf("serve until cancelled: exit %d, want %d; stderr %q", code, exitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "on http://127.0.0.1:") {
		t.Errorf("serve did not say where it listens: %q", stderr.String())
	}
}

// TestServeChecksHost: serve on loopback refuses a request that names
// another host (DNS rebinding) with 421, and answers its own address.
func TestServeChecksHost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- serveStore(ctx, []string{t.TempDir()}, "127.0.0.1:0", w)
		w.Close()
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	m := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("serve said %q (%v), want its address", line, err)
	}
	go io.Copy(io.Discard, r)
	for host, want := range map[string]int{m[1]: http.StatusOK, "rebound.example": http.StatusMisdirectedRequest} {
		req, _ := http.NewRequest("GET", "http://"+m[1]+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
	cancel()
	if c := <-code; c != exitInterrupted {
		t.Errorf("exit %d, want %d", c, exitInterrupted)
	}
}
