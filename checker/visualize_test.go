package checker

import (
	"bytes"
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locktest/locktest/history"
)

// xssPayload is what a hostile client may send as its error: markup that
// runs script as soon as a page inserts it as HTML.
const xssPayload = `<img src=x onerror="document.title='XSS RAN'">`

// hoverAll is appended to a visualization page: it moves the mouse over
// each operation in turn, as a reader does, until the tooltip shows the
// payload's text, then records what the tooltip holds (as text) for the
// test to read from the dumped DOM.
const hoverAll = `<script>
setTimeout(() => {
  const tip = document.querySelector('.tooltip')
  let hovered = 0
  for (const el of document.querySelectorAll('[data-partition][data-index]')) {
    el.dispatchEvent(new MouseEvent('mouseover', {bubbles: true, clientX: 10, clientY: 10}))
    el.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: 10, clientY: 10}))
    hovered++
    if (tip.innerHTML.includes('onerror') || tip.querySelector('img')) break
  }
  const out = document.createElement('pre')
  out.id = 'hovered'
  out.textContent = hovered + '\n' + tip.textContent + '\n' + tip.innerHTML
  document.body.append(out)
}, 100)
</script>`

// TestVisualizationEscapesClientText opens a mutex visualization whose
// ops carry a client's markup as their error in headless Chromium, hovers
// the ops, and checks the markup shows as text and never runs: porcupine's
// tooltip inserts our metadata with innerHTML.
func TestVisualizationEscapesClientText(t *testing.T) {
	if testing.Short() {
		t.Skip("starts chromium")
	}
	recs := build(
		acq(0, 10, 20, history.OK),
		op{p: 0, f: history.FRelease, call: 30, ret: 40, outcome: history.Fail, errText: xssPayload},
		op{p: 1, f: history.FAcquire, call: 50, ret: 60, outcome: history.Info, errText: xssPayload},
	)
	rep := Check(recs, Options{})
	page := filepath.Join(t.TempDir(), "mutex.html")
	if err := rep.Mutex.WriteVisualization(page, rep.Faults); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc = bytes.Replace(doc, []byte("</body>"), []byte(hoverAll+"</body>"), 1)
	if err := os.WriteFile(page, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, page)
	if title := regexp.MustCompile(`<title>(.*?)</title>`).FindStringSubmatch(dom); title == nil || title[1] != "Porcupine" {
		t.Errorf("the page's title became %q: the client's markup ran", title)
	}
	hovered := regexp.MustCompile(`(?s)<pre id="hovered">(.*?)</pre>`).FindStringSubmatch(dom)
	if hovered == nil {
		t.Fatalf("the hover script did not run; page:\n%.3000s", dom)
	}
	report := html.UnescapeString(hovered[1])
	if !strings.Contains(report, xssPayload) {
		t.Errorf("the tooltip does not show the client's error as text:\n%s", report)
	}
	if strings.Contains(report, "<img") && !strings.Contains(report, "&lt;img") {
		t.Errorf("the tooltip holds the client's markup as HTML:\n%s", report)
	}
}

// dumpDOM opens page in headless Chromium (a missing browser fails the
// test: scripts/install-deps installs it) and returns the document as the
// browser built it, once its scripts and the image loads they start are
// done.
func dumpDOM(t *testing.T, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "file://"+page)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// TestOpMetadataEscaped: every text of the tooltip metadata is escaped,
// and its times count from the history's start.
func TestOpMetadataEscaped(t *testing.T) {
	op := &history.Op{Process: 3, F: history.FRelease, Key: `<b>k</b>`, Outcome: history.Fail,
		Call: 1_500_000_000, Return: 1_750_000_000, Error: xssPayload, InvokeIndex: 7}
	got := opMetadata(op, 1_000_000_000)
	want := `record #7: c3 release &#34;&lt;b&gt;k&lt;/b&gt;&#34; fail, called at 0.500s, returned at 0.750s: ` +
		html.EscapeString(xssPayload)
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
