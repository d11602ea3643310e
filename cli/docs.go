package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date the man pages give. It is fixed, so that
// regenerating the pages changes them only where the command line did.
var manDate = time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)

// WriteDocs writes the command line's reference into dir: a Markdown page
// per command (locktest.md links the others) and its man page under
// dir/man. It is exported for cli/gendocs (go generate ./cli), which keeps
// docs/cli in step with the commands; pages of commands that no longer
// exist are removed.
func WriteDocs(dir string) error {
	root := newRoot("locktest", io.Discard, io.Discard)
	var noDates func(*cobra.Command)
	noDates = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			noDates(sub)
		}
	}
	noDates(root)
	man := filepath.Join(dir, "man")
	for _, pattern := range []string{filepath.Join(dir, "locktest*.md"), filepath.Join(man, "locktest*.1")} {
		old, _ := filepath.Glob(pattern) // the pattern is well-formed
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("remove the old page: %w", err)
			}
		}
	}
	if err := os.MkdirAll(man, 0o755); err != nil {
		return fmt.Errorf("docs directory: %w", err)
	}
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("Markdown pages: %w", err)
	}
	header := &doc.GenManHeader{Title: "LOCKTEST", Section: "1", Date: &manDate, Source: "locktest", Manual: "locktest manual"}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
