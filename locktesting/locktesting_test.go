package locktesting

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRunPattern: the pattern go test gets matches the test (and a
// subtest, whose name has slashes and go test's underscores) and nothing
// that merely contains its name, and survives the shell.
func TestRunPattern(t *testing.T) {
	cases := []struct {
		name, want string
	}{
		{"TestLock", "^TestLock$"},
		{"TestLock/paused_holder", "^TestLock$/^paused_holder$"},
		{"TestLock/a.b+c", `^TestLock$/^a\.b\+c$`},
	}
	for _, tc := range cases {
		if got := runPattern(tc.name); got != tc.want {
			t.Errorf("runPattern(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
	cmd := goTestCommand("TestLock/it's")
	out, err := exec.Command("sh", "-c", `printf '%s\n' `+cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(string(out))
	if len(words) != 6 || words[3] != `^TestLock$/^it's$` || words[5] != "github.com/locktest/locktest/locktesting" {
		t.Errorf("%s: the shell reads %q", cmd, words)
	}
}

func TestTestedPackage(t *testing.T) {
	cases := map[string]string{
		"example.com/lock.test":  "example.com/lock",
		"example.com/cmd/mylock": "example.com/cmd/mylock", // a main package's tests
		"command-line-arguments": ".",
		"":                       ".",
	}
	for main, want := range cases {
		if got := testedPackage(main); got != want {
			t.Errorf("testedPackage(%q) = %s, want %s", main, got, want)
		}
	}
}

// TestOptions: every option sets what it says; a setting that does not
// exist, a value that does not parse, the design given as a setting and
// an outcome that is neither safe nor unsafe are refused, saying why.
func TestOptions(t *testing.T) {
	var sc testCase
	for _, opt := range []Option{Fault("pause-holder", "latency"), Workload("mutex"), Duration(8e9), Clients(3),
		Seed(7), Store("/s"), Set("ttl", "500ms"), Expect(Unsafe)} {
		if err := opt(&sc); err != nil {
			t.Fatal(err)
		}
	}
	c := sc.cfg
	if strings.Join(c.Faults, ",") != "pause-holder,latency" || c.Workload != "mutex" || c.Duration.String() != "8s" ||
		c.Clients != 3 || c.Seed != 7 || c.Store != "/s" || c.TTL.String() != "500ms" || sc.expect != Unsafe {
		t.Errorf("options gave %+v, expect %s", c, sc.expect)
	}
	bad := []struct {
		opt  Option
		want string
	}{
		{Set("bogus", "1"), "no setting --bogus"},
		{Set("impl", "redis-single"), "no setting --impl"},
		{Set("ttl", "soon"), `--ttl "soon": not a duration`},
		{Expect("maybe"), "want locktesting.Safe or locktesting.Unsafe"},
	}
	for _, tc := range bad {
		if err := tc.opt(&sc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one saying %q", err, tc.want)
		}
	}
}

func TestKeyLines(t *testing.T) {
	summary := "scenario  x\nresource  1 lost\nlatency   p50\ncheck     mutex INVALID\n          - c2 believed\n" +
		"note      why\nverdict   INVALID\nrun dir   /d\nreport    /d/report.html\n"
	want := "    resource  1 lost\n    check     mutex INVALID\n    note      why\n    verdict   INVALID\n    report    /d/report.html\n"
	if got := keyLines(summary); got != want {
		t.Errorf("keyLines:\n%s\nwant:\n%s", got, want)
	}
}
