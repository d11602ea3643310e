package runner

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// nameRe is what a scenario or suite name may be: it names one directory
// of the store, so it holds no '/' and cannot be "." or "..".
var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// maxNameLen keeps a name, with the seed a suite appends, within a
// file name's 255 bytes.
const maxNameLen = 200

// latestLink is the link in the store, and in each scenario's directory,
// to the newest run; relink makes it through latestLink.tmpPID.
const latestLink = "latest"

// storeEntries are the names the store itself uses beside the scenarios:
// the latest link, and the directories suite run, compare, explore and
// envelope write into by default. A scenario by one of these names would
// turn the link into a directory (and every later run into that store
// would fail), or mix its runs with those outputs.
var storeEntries = []string{latestLink, "suites", "compare", "explore", "envelope"}

// CheckName checks a scenario or suite name; the run's --scenario and the
// names in suite files follow the same rule.
func CheckName(name string) error {
	if !nameRe.MatchString(name) || len(name) > maxNameLen {
		return fmt.Errorf("name %q: want up to %d letters, digits, '.', '_', '+' and '-', starting with a letter or digit (it names a directory in the store)", name, maxNameLen)
	}
	if slices.Contains(storeEntries, name) || strings.HasPrefix(name, latestLink+".") {
		return fmt.Errorf("name %q: the store uses it for itself (%s, and %s.*): choose another name", name, strings.Join(storeEntries, ", "), latestLink)
	}
	return nil
}
