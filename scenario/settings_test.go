package scenario

import (
	"reflect"
	"slices"
	"testing"
)

// TestSettingsCoverConfig: every Config field is exactly one setting, so a
// field added to Config without a row in Settings (no flag, not in the
// reproduce command, not in suites) fails here.
func TestSettingsCoverConfig(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[Config]().Fields() {
		if f.IsExported() {
			fields = append(fields, f.Name)
		}
	}
	var inTable []string
	flags, names := map[string]bool{}, map[string]bool{}
	for _, s := range Settings {
		inTable = append(inTable, s.Field)
		if flags[s.Flag] {
			t.Errorf("--%s is in Settings twice", s.Flag)
		}
		flags[s.Flag] = true
		if n := s.Name(); n != "" && names[n] {
			t.Errorf("name %s is in Settings twice", n)
		} else {
			names[n] = true
		}
		if s.Help == "" {
			t.Errorf("--%s has no help", s.Flag)
		}
		_ = s.Value(&Config{}).String() // panics on a field type Value cannot read
	}
	slices.Sort(fields)
	slices.Sort(inTable)
	if !slices.Equal(fields, inTable) {
		t.Fatalf("Config fields %v, Settings fields %v: give every Config field one row in Settings", fields, inTable)
	}
}

func TestCommandQuotes(t *testing.T) {
	cases := []struct{ word, want string }{
		{"redis-single", "redis-single"},
		{"pause-holder,latency", "pause-holder,latency"},
		{"latency=primary", "latency=primary"},
		{"/tmp/a b", "'/tmp/a b'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
		{"~/x", "'~/x'"},
	}
	for _, tc := range cases {
		if got := ShellQuote(tc.word); got != tc.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tc.word, got, tc.want)
		}
	}
}
