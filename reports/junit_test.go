package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func TestJUnit(t *testing.T) {
	cases := []struct {
		c                TestCase
		passed           bool
		failure, errText string
	}{
		{TestCase{Scenario: "anomaly-reproduced", Expected: Unsafe, Actual: Unsafe}, true, "", ""},
		{TestCase{Scenario: "anomaly-lost", Expected: Unsafe, Actual: Safe}, false, "expected unsafe, got safe", ""},
		{TestCase{Scenario: "safe-broke", Expected: Safe, Actual: Unsafe}, false, "expected safe, got unsafe", ""},
		{TestCase{Scenario: "undecided", Expected: Safe, Actual: Undecided}, false, "could not decide", ""},
		{TestCase{Scenario: "any-unsafe", Expected: AnyOutcome, Actual: Unsafe}, true, "", ""},
		{TestCase{Scenario: "any-undecided", Expected: AnyOutcome, Actual: Undecided}, false, "expected any", ""},
		{TestCase{Scenario: "crashed", Expected: Safe, Err: "internal error: redis-server exited"}, false, "", "redis-server exited"},
	}
	var tcs []TestCase
	for _, tc := range cases {
		if got := tc.c.Passed(); got != tc.passed {
			t.Errorf("%s: Passed() = %v, want %v", tc.c.Scenario, got, tc.passed)
		}
		c := tc.c
		c.Group, c.Command, c.Duration, c.RunDir = "redis-single", "locktest run --impl x --seed 7", 1500*time.Millisecond, "/store/x/1"
		tcs = append(tcs, c)
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, Suite{Name: "anomalies", Timestamp: time.Unix(0, 0), Cases: tcs}); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if doc.Tests != len(cases) || doc.Failures != 4 || doc.Errors != 1 {
		t.Fatalf("tests %d failures %d errors %d, want %d 4 1", doc.Tests, doc.Failures, doc.Errors, len(cases))
	}
	if !strings.Contains(buf.String(), `time="10.500"`) || !strings.Contains(buf.String(), `timestamp="1970-01-01T00:00:00"`) {
		t.Fatalf("suite time or timestamp missing:\n%s", buf.String())
	}
	for i, tc := range cases {
		jc := doc.Suites[0].Cases[i]
		if jc.Name != tc.c.Scenario || jc.Classname != "locktest.redis-single" {
			t.Errorf("case %d named %s / %s", i, jc.Name, jc.Classname)
		}
		switch {
		case tc.failure != "":
			if jc.Failure == nil || !strings.Contains(jc.Failure.Message, tc.failure) || !strings.Contains(jc.Failure.Body, "--seed 7") {
				t.Errorf("%s: failure %+v, want message %q and the reproduce command", jc.Name, jc.Failure, tc.failure)
			}
		case tc.errText != "":
			if jc.Error == nil || !strings.Contains(jc.Error.Message, tc.errText) {
				t.Errorf("%s: error %+v, want %q", jc.Name, jc.Error, tc.errText)
			}
		default:
			if jc.Failure != nil || jc.Error != nil || !strings.Contains(jc.SystemOut, "--seed 7") {
				t.Errorf("%s: want a pass with the reproduce command, got %+v", jc.Name, jc)
			}
		}
	}
}

// TestJUnitVersions: a case says which locktest build and which servers it
// ran on, as its results do.
func TestJUnitVersions(t *testing.T) {
	r := Results{Scenario: "redis-single_counter_none", Locktest: Build{Module: "github.com/locktest/locktest",
		Version: "(devel)", Revision: "0123456789abcdef0123", Modified: true, Go: "go1.26.8"},
		Servers: map[string]string{"redis-server": "7.0.15", "etcd": "3.4.23"}}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, Suite{Name: "s", Cases: []TestCase{CaseFromResults(r, Safe, time.Second)}}); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range doc.Suites[0].Cases[0].Properties {
		got[p.Name] = p.Value
	}
	want := map[string]string{"locktest": "github.com/locktest/locktest (devel) 0123456789ab+modified go1.26.8",
		"server.redis-server": "7.0.15", "server.etcd": "3.4.23"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("property %s = %q, want %q", k, got[k], v)
		}
	}
}
