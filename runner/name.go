package runner

import (
	"fmt"
	"regexp"
)

// nameRe is what a scenario or suite name may be: it names one directory
// of the store, so it holds no '/' and cannot be "." or "..".
var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// maxNameLen keeps a name, with the seed a suite appends, within a
// file name's 255 bytes.
const maxNameLen = 200

// CheckName checks a scenario or suite name; the run's --scenario and the
// names in suite files follow the same rule.
func CheckName(name string) error {
	if !nameRe.MatchString(name) || len(name) > maxNameLen {
		return fmt.Errorf("name %q: want up to %d letters, digits, '.', '_', '+' and '-', starting with a letter or digit (it names a directory in the store)", name, maxNameLen)
	}
	return nil
}
