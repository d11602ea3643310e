package runner

import (
	"strings"
	"testing"
)

// TestCheckName: a name is one directory of the store, never a path.
func TestCheckName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"redis-single_counter_pause-holder+latency", true},
		{"row1.seed-2", true},
		{"..", false},
		{"../../x", false},
		{"a/b/c", false},
		{".hidden", false},
		{"", false},
		{"sp ace", false},
		{strings.Repeat("a", maxNameLen), true},
		{strings.Repeat("a", maxNameLen+1), false},
		{"latest", false},
		{"latest.tmp123", false},
		{"suites", false},
		{"latest-run", true},
	}
	for _, tc := range cases {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
