package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ownBinary is a user's binary as docs/go-api.md has them write it: a
// module of their own, in a git repository of their own, whose main
// (examples/mylock's) registers a design and calls cli.Main. It is built
// under the name given, with the go command's VCS stamp.
type ownBinary struct {
	path     string
	revision string    // the repository's HEAD
	time     time.Time // its commit time
}

// buildOwnBinary builds it: the locktest packages come
// from the build cache (the same sources as the harness's binary), so it
// costs a compile of one main and a link, some 10 s.
func buildOwnBinary(t *testing.T, name string) ownBinary {
	t.Helper()
	repo, git := ownRepo(t, nil)
	b := ownBinary{path: filepath.Join(t.TempDir(), name), revision: git("rev-parse", "HEAD")}
	var err error
	if b.time, err = time.Parse(time.RFC3339, git("log", "-1", "--format=%cI")); err != nil {
		t.Fatal(err)
	}
	// -buildvcs=true overrides a GOFLAGS that turns stamping off: the
	// test is about the stamp.
	build := exec.Command("go", "build", "-buildvcs=true", "-o", b.path, ".")
	build.Dir = repo
	build.Env = append(os.Environ(), offline...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", repo, err, out)
	}
	return b
}

// offline keeps the go command in a user's repository to the module cache
// and this checkout: a test must not reach for the network.
var offline = []string{"GOPROXY=off", "GOFLAGS=-mod=readonly"}

// ownRepo makes a user's repository: a module of their own whose main is
// examples/mylock's, with extra files, committed to git. It returns the
// directory and a git runner in it.
func ownRepo(t *testing.T, extra map[string]string) (string, func(args ...string) string) {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "mylock")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// locktest's own requirements, so that the build needs no module
	// lookup, plus locktest itself from this checkout.
	mod := strings.Replace(string(gomod), "module github.com/locktest/locktest", "module example.com/mylock", 1) +
		"\nrequire github.com/locktest/locktest v0.0.0\n\nreplace github.com/locktest/locktest => " + root + "\n"
	main, err := os.ReadFile(filepath.Join(root, "examples", "mylock", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": main}
	for file, data := range extra {
		files[file] = []byte(data)
	}
	for file, data := range files {
		if err := os.WriteFile(filepath.Join(repo, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "my lock")
	return repo, git
}

// TestOwnBinary builds a user's binary (about 10 s on an idle machine, a
// minute or two at load average 30) and checks what it says of itself.
func TestOwnBinary(t *testing.T) {
	b := buildOwnBinary(t, "mylock-test")
	t.Run("version", func(t *testing.T) { checkVersionFromVCS(t, b) })
	t.Run("name", func(t *testing.T) { checkOwnName(t, b.path) })
}

// TestRenamedLocktest: the stock binary installed under another name
// names itself by that name too.
func TestRenamedLocktest(t *testing.T) {
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(t.TempDir(), "lt")
	if err := os.WriteFile(renamed, data, 0o755); err != nil {
		t.Fatal(err)
	}
	checkOwnName(t, renamed)
}

// checkVersionFromVCS: `--version` and `version` of a binary built in a
// git repository name that repository's revision and commit time, read
// from the build information, and say nothing of "(devel)".
func checkVersionFromVCS(t *testing.T, b ownBinary) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := runIn(t, b.path, "", args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
		lines := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			k, v, _ := strings.Cut(l, " ")
			lines[k] = strings.TrimSpace(v)
		}
		if lines["revision"] != b.revision {
			t.Errorf("%v: revision %q, want the repository's HEAD %s", args, lines["revision"], b.revision)
		}
		got, err := time.Parse(time.RFC3339, lines["time"])
		if err != nil || !got.Equal(b.time) {
			t.Errorf("%v: time %q, want the commit's %s", args, lines["time"], b.time.UTC().Format(time.RFC3339))
		}
		if strings.Contains(r.stdout, "(devel)") {
			t.Errorf("%v: prints (devel):\n%s", args, r.stdout)
		}
	}
}

// checkOwnName: the binary at bin calls itself by its file's name in its
// usage lines, its errors and the commands they suggest, never locktest.
func checkOwnName(t *testing.T, bin string) {
	name := filepath.Base(bin)
	cases := []struct {
		args       []string
		code       int
		out, wants string // stdout or stderr, and what it must hold
	}{
		{[]string{"run", "--bogus"}, 254, "stderr", name + " run: unknown flag --bogus; see " + name + " run --help"},
		{[]string{"run"}, 254, "stderr", name + " run: --impl is required (" + name + " list impls)"},
		{[]string{"list", "bogus"}, 254, "stderr", name + ` list: unknown list "bogus"`},
		{[]string{"help", "explore"}, 0, "stdout", "usage:\n  " + name + " explore"},
		{[]string{"run", "--help"}, 0, "stdout", "(" + name + " list impls)"},
	}
	store := filepath.Join(t.TempDir(), "store")
	for _, tc := range cases {
		r := runIn(t, bin, store, tc.args...)
		text := r.stdout
		if tc.out == "stderr" {
			text = r.stderr
		}
		if r.code != tc.code || !strings.Contains(text, tc.wants) {
			t.Errorf("%s %v: exit %d, %s %q; want %d and %q", name, tc.args, r.code, tc.out, text, tc.code, tc.wants)
		}
		if strings.Contains(r.stderr, "locktest") {
			t.Errorf("%s %v: stderr names locktest: %q", name, tc.args, r.stderr)
		}
	}
}
