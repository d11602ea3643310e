package docs

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// TestWorkflowsLint: every GitHub Actions workflow docs/ci.md offers to
// copy passes actionlint (syntax, expressions, action inputs, job needs).
func TestWorkflowsLint(t *testing.T) {
	b, err := os.ReadFile("ci.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(b, -1)
	linted := 0
	for _, m := range blocks {
		src := m[1]
		if !strings.Contains(string(src), "\njobs:") {
			continue // not a GitHub workflow (the GitLab job)
		}
		l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		errs, err := l.Lint("<stdin>", src, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			t.Errorf("docs/ci.md workflow %q, line %d: %s", firstLine(src), e.Line, e.Message)
		}
		linted++
	}
	if linted < 3 {
		t.Fatalf("linted %d workflows in docs/ci.md, want the action's, the one-job and the sharded one", linted)
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}
