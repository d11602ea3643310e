package serve

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/reports"
)

// TestHeaders: every response says nosniff and carries a CSP (the store's
// files a sandboxed one), and the store's files have the type their name
// says, plain text for anything else: never the system's MIME table's
// (here made to call .log HTML) nor a guess from markup in a log.
func TestHeaders(t *testing.T) {
	if err := mime.AddExtensionType(".log", "text/html; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	s := newTestStore(t)
	markup := []byte("<!DOCTYPE html><html><script>alert(1)</script></html>\n")
	for _, f := range []string{reports.WorkerLogDir + "/c0.log", reports.NodeLogsDir + "/n1/LOCK"} {
		p := filepath.Join(s.dir, s.done, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, markup, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const html, text = "text/html; charset=utf-8", "text/plain; charset=utf-8"
	for _, tc := range []struct {
		target, ctype, csp string
		code               int
	}{
		{"/", html, pageCSP, 200},
		{"/_/run/" + s.done, html, pageCSP, 200},
		{"/_/compare.html", html, pageCSP, 200},
		{"/_/compare.md", text, pageCSP, 200},
		{"/_/compare.json", "application/json", pageCSP, 200},
		{"/_/nothing", text, pageCSP, 404},
		{"/" + s.done + "/" + reports.WorkerLogDir + "/c0.log", text, fileCSP, 200},
		{"/" + s.done + "/" + reports.NodeLogsDir + "/n1/LOCK", text, fileCSP, 200},
		{"/" + s.done + "/" + reports.HistoryFile, text, fileCSP, 200},
		{"/" + s.done + "/" + reports.SummaryFile, text, fileCSP, 200},
		{"/" + s.done + "/" + reports.ResultsFile, "application/json", fileCSP, 200},
		{"/" + s.done + "/" + reports.ReportFile, html, fileCSP, 200},
		{"/" + s.done + "/" + reports.MutexViz, html, fileCSP, 200},
		{"/" + s.done + "/" + reports.TimelinePNG, "image/png", fileCSP, 200},
		{"/" + s.done + "/" + reports.TimelineSVG, "image/svg+xml", fileCSP, 200},
		{"/" + s.done + "/", html, fileCSP, 200}, // the directory's listing
		{"/" + s.done + "/missing.log", text, fileCSP, 404},
	} {
		code, _, h := get(t, srv, tc.target)
		if code != tc.code || h.Get("Content-Type") != tc.ctype || h.Get("Content-Security-Policy") != tc.csp ||
			h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %q, CSP %q, X-Content-Type-Options %q; want %d %q, CSP %q, nosniff", tc.target, code,
				h.Get("Content-Type"), h.Get("Content-Security-Policy"), h.Get("X-Content-Type-Options"), tc.code, tc.ctype, tc.csp)
		}
	}
}

// serveBound serves the store at dir over a real loopback socket, bound
// to its address as locktest serve binds itself.
func serveBound(t *testing.T, dir string) (*Server, *httptest.Server) {
	t.Helper()
	srv, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	srv.Bind(ts.Listener.Addr())
	return srv, ts
}

// TestHostChecked: bound to loopback, the server answers only requests
// that name its address (or localhost on its port), over a real socket;
// bound elsewhere, any name.
func TestHostChecked(t *testing.T) {
	s := newTestStore(t)
	srv, ts := serveBound(t, s.dir)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	for host, want := range map[string]int{
		ts.Listener.Addr().String(): 200,
		"localhost:" + port:         200,
		"LOCALHOST:" + port:         200,
		"rebound.example:" + port:   421,
		"rebound.example":           421,
		"127.0.0.1:1":               421,
	} {
		req, _ := http.NewRequest("GET", ts.URL+"/", nil)
		req.Host = host
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d: %s", host, resp.StatusCode, want, body)
		}
		if want == 421 && (bytes.Count(bytes.TrimSpace(body), []byte("\n")) != 0 || !bytes.Contains(body, []byte(ts.Listener.Addr().String()))) {
			t.Errorf("Host %q: refused with %q; want one line naming the address to open", host, body)
		}
	}
	srv.Bind(&net.TCPAddr{IP: net.IPv4zero, Port: 8080})
	if code, _, _ := get(t, srv, "/"); code != 200 {
		t.Errorf("bound to every address: Host example.com answered %d, want 200", code)
	}
}

// TestVisualizationRunsUnderCSP: porcupine's page, served with the store's
// CSP, still draws (its inline script runs) in Chromium, from an origin of
// its own (the sandbox): it cannot read the rest of the store.
func TestVisualizationRunsUnderCSP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts chromium")
	}
	s := newTestStore(t)
	_, ts := serveBound(t, s.dir)
	// After porcupine's script: what it drew, and what the page's origin is.
	probe := `<script>document.body.append(Object.assign(document.createElement('pre'),
{id: 'probe', textContent: document.querySelectorAll('#canvas svg rect').length + ' ' + self.origin}))</script>`
	viz := filepath.Join(s.dir, s.done, reports.MutexViz)
	doc, err := os.ReadFile(viz)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(viz, bytes.Replace(doc, []byte("</body>"), []byte(probe+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=3000", "--dump-dom", ts.URL+"/"+s.done+"/"+reports.MutexViz)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`<pre id="probe">(\d+) (\S+)</pre>`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("the page's script did not run under the CSP:\n%.2000s", out)
	}
	if m[1] == "0" {
		t.Errorf("porcupine drew nothing under the CSP")
	}
	if m[2] != "null" || strings.Contains(m[2], "127.0.0.1") {
		t.Errorf("the page runs in origin %s, want its own (null): it could read the store", m[2])
	}
}
