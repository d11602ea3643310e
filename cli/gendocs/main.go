// Command gendocs writes the reference of the locktest command line, a
// Markdown page and a man page per command, into the directory it is
// given: go generate ./cli regenerates docs/cli with it, and a test of
// package cli fails when docs/cli is not what it would write.
package main

import (
	"fmt"
	"os"

	"github.com/locktest/locktest/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./cli/gendocs DIR")
		os.Exit(254)
	}
	if err := cli.WriteDocs(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(255)
	}
}
