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

// TestListValues: a list setting takes its items trimmed, an empty value
// clears it, and an empty item is refused rather than dropped.
func TestListValues(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "pause-holder", want: []string{"pause-holder"}},
		{in: "a, b", want: []string{"a", "b"}},
		{in: "", want: nil},
		{in: "pause-holder,", bad: true},
		{in: "a,,b", bad: true},
		{in: ",a", bad: true},
	} {
		var got []string
		err := Value{&got}.Set(c.in)
		if (err != nil) != c.bad {
			t.Errorf("Set(%q): err %v, want bad=%v", c.in, err, c.bad)
			continue
		}
		if !c.bad && !slices.Equal(got, c.want) {
			t.Errorf("Set(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestProgram: the name a binary goes by is its file's name as it was run
// (a user's main, or locktest installed under another name), but this
// module's go test binaries stand for locktest, as the harness's binary.
func TestProgram(t *testing.T) {
	cases := []struct {
		arg0    string
		ownTest bool
		want    string
	}{
		{"/usr/local/bin/mylock-test", false, "mylock-test"},
		{"./bin/locktest", false, "locktest"},
		{"lt", false, "lt"},
		{"/tmp/go-build1/b001/cli.test", true, "locktest"},
		{"", false, "locktest"},
	}
	for _, tc := range cases {
		if got := program(tc.arg0, tc.ownTest); got != tc.want {
			t.Errorf("program(%q, %v) = %q, want %q", tc.arg0, tc.ownTest, got, tc.want)
		}
	}
	if !ownTest() {
		t.Error("ownTest() is false in a go test binary of this module")
	}
	if Program() != "locktest" {
		t.Errorf("Program() = %q in this module's test binary, want locktest", Program())
	}
}
