package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
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
