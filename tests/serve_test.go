package tests

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktest/locktest/reports"
)

// TestServeFollowsRuns: locktest run --progress plain prints its phases on
// stderr and leaves stdout to the summary; locktest serve, over a store
// with that finished run and one in progress, shows the verdict of the
// first, follows the second, with its figures over time, until its own
// verdict is in (and its figures still after), renders in a
// browser without format garbage, and ends on SIGINT with 130, leaving
// nothing running.
func TestServeFollowsRuns(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	done := locktestIn(t, store, "run", "--impl", "redis-single", "--duration", "3s", "--progress", "plain")
	if done.code > 2 {
		t.Fatalf("first run: exit %d", done.code)
	}
	for _, phase := range []string{"running", "healing", "final read", "checking", "report"} {
		if !strings.Contains(done.stderr, "locktest run: "+phase+" ") {
			t.Errorf("stderr has no %q line:\n%s", phase, done.stderr)
		}
	}
	if strings.Contains(done.stdout, "locktest run:") || !strings.HasPrefix(done.stdout, "scenario ") {
		t.Errorf("progress on stdout, or the summary does not begin it:\n%s", done.stdout)
	}
	finished := done.results(t)

	var ee *exec.ExitError
	base, serve := startServe(t, store)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	running := exec.CommandContext(ctx, binary, "run", "--impl", "redis-single", "--duration", "6s", "--store", store, "--progress", "none")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer running.Process.Kill()

	// The index shows the finished run's verdict and, once the clients
	// began, the other one running.
	index := waitFor(t, base+"/", "running ")
	outcome := strings.ToUpper(string(reports.OutcomeOf(finished.Verdict)))
	if !strings.Contains(index, "<b>"+outcome+"</b>") || !strings.Contains(index, "<b>IN PROGRESS</b>") {
		t.Fatalf("index lacks the verdict %s or the run in progress:\n%s", outcome, index)
	}
	page := regexp.MustCompile(`href="(/_/run/[^"]+)">[^<]*</a><br><small>[^<]*</small></td>\s*<td>[^<]*</td>\s*<td><b>IN PROGRESS`).FindStringSubmatch(index)
	if page == nil {
		t.Fatalf("no link to the run in progress:\n%s", index)
	}
	if body := fetch(t, base+page[1]); !strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, "ops") {
		t.Fatalf("the page of the run in progress neither reloads nor counts ops:\n%s", body)
	}
	// Its figures over time while it runs: charts and a table from its
	// samples, with redis-0's own count of its sessions.
	if body := waitFor(t, base+page[1], `<th class="num">redis-0 sessions</th>`); !strings.Contains(body, `<h2 id="figures">Over time</h2>`) ||
		!strings.Contains(body, "<polyline") || !strings.Contains(body, "lost updates so far") {
		t.Fatalf("the page of the run in progress has no figures over time:\n%s", body)
	}
	if dom := renderDOM(t, base+"/"); dom != "" && (strings.Contains(dom, "%!") || !strings.Contains(dom, "IN PROGRESS")) {
		t.Errorf("the index as chromium renders it:\n%s", dom)
	}

	if err := running.Wait(); err != nil && !errors.As(err, &ee) {
		t.Fatalf("second run: %v", err)
	}
	second, err := reports.ReadResults(filepath.Join(store, strings.TrimPrefix(page[1], "/_/run/")))
	if err != nil {
		t.Fatal(err)
	}
	outcome = strings.ToUpper(string(reports.OutcomeOf(second.Verdict)))
	if body := fetch(t, base+page[1]); !strings.Contains(body, "<b>"+outcome+"</b>") || strings.Contains(body, `http-equiv="refresh"`) ||
		!strings.Contains(body, `<table id="over-time">`) {
		t.Fatalf("the finished run's page shows no %s verdict, still reloads, or has no figures over time:\n%s", outcome, body)
	}

	if err := serve.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("serve after SIGINT: %v, want exit 130", err)
	}
	assertNothingLeft(t, store)
}

// startServe starts locktest serve on a free port and returns its address
// as it prints it.
func startServe(t *testing.T, store string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, "serve", store, "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("serve said %q (%v), want its address", line, err)
	}
	go io.Copy(io.Discard, stderr)
	return m[1], cmd
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return string(body)
}

// waitFor fetches url until its body holds want.
func waitFor(t *testing.T, url, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := fetch(t, url)
		if strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q:\n%s", url, want, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// renderDOM is the page as headless chromium renders it; "" (the check
// skipped, and said so) when chromium is not installed.
func renderDOM(t *testing.T, url string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Log("chromium not installed: the page is not rendered in a browser")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+t.TempDir(), "--dump-dom", url)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}
