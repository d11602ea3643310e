// Command locktest runs distributed lock designs as real processes under
// real faults and checks, with porcupine, whether they kept their promise.
package main

import (
	"os"

	"github.com/locktest/locktest/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
