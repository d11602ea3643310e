package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestDocsUpToDate: docs/cli is what go generate ./cli writes now, page
// for page; a command, flag or help text changed without regenerating
// them fails here.
func TestDocsUpToDate(t *testing.T) {
	const committed = "../docs/cli"
	fresh := t.TempDir()
	if err := WriteDocs(fresh); err != nil {
		t.Fatal(err)
	}
	pages := func(root string) map[string][]byte {
		out := map[string][]byte{}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			rel, _ := filepath.Rel(root, path) // path is under root
			out[rel] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := pages(fresh), pages(committed)
	for name, data := range want {
		if old, ok := got[name]; !ok {
			t.Errorf("docs/cli/%s is missing: run go generate ./cli", name)
		} else if !bytes.Equal(old, data) {
			t.Errorf("docs/cli/%s is stale: run go generate ./cli", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/cli/%s documents no command: run go generate ./cli", name)
		}
	}
}
