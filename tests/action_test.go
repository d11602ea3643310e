package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/suite"
)

// TestActionInUsersRepository runs what the GitHub Action runs
// (scripts/ci-suite) in a user's repository: their own module, whose main
// registers their lock (examples/mylock's), and their suite file. It
// builds their binary, installs nothing (the suite needs redis-server,
// which is here), runs the suite, and leaves summary.md, junit.xml and the
// runs, and the job summary. Cost: a build (about 10 s) and two 3 s runs.
func TestActionInUsersRepository(t *testing.T) {
	file := `name: mine
defaults:
  workload: counter
  clients: 3
  duration: 3s
scenarios:
  - name: my-lock-alone
    impl: example-redis
    faults: none
    expect: safe
  - name: my-lock-paused
    impl: example-redis
    faults: pause-holder
    fault_interval: 1s
    fault_duration: 2s
    expect: unsafe
`
	repo, _ := ownRepo(t, map[string]string{"locktest.yaml": file})
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "ci-suite"))
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), append(offline, "LOCKTEST_SUITE=locktest.yaml", "LOCKTEST_MAIN=.", "GITHUB_STEP_SUMMARY="+summary)...)
	out, err := cmd.CombinedOutput()
	t.Logf("scripts/ci-suite in %s:\n%s", repo, out)
	if err != nil {
		t.Fatalf("scripts/ci-suite: %v", err)
	}
	dir := filepath.Join(repo, "out", "locktest")
	for _, f := range []string{"summary.md", "junit.xml", "suite.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	runs, err := filepath.Glob(filepath.Join(dir, suite.RunsDir, "*", "*", "latest", reports.ResultsFile))
	if err != nil || len(runs) != 2 {
		t.Errorf("want the two runs' results under %s, found %v (%v)", dir, runs, err)
	}
	step, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(step), "my-lock-paused") {
		t.Errorf("the job summary does not show the suite: %v\n%s", err, step)
	}
	assertNothingLeft(t, dir)
}
