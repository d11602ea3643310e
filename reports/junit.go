package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
)

// TestCase is one scenario as a CI system shows it. It passes when the
// design did what the suite expects under the fault: an anomaly the suite
// expects to reproduce is a pass when it shows up, and a failure when it
// does not (the harness lost its teeth).
type TestCase struct {
	// Scenario names the case, e.g. "redis-single_counter_pause-holder".
	Scenario string
	// Group is what CI groups cases by (JUnit's classname), e.g. the suite
	// or the design; empty means "locktest".
	Group    string
	Expected Outcome
	Actual   Outcome
	// Command reproduces the run.
	Command  string
	Duration time.Duration
	RunDir   string
	// Details explains the actual outcome: lost updates, the first
	// violation and the fault active then.
	Details string
	// Err is set when the scenario could not be run or checked at all
	// (crash, bad configuration): a JUnit error rather than a failure.
	Err string
	// Locktest and Servers say what the case ran on, as in Results.
	Locktest Build
	Servers  map[string]string
}

// Passed reports whether the case met its expectation.
func (c TestCase) Passed() bool {
	if c.Err != "" {
		return false
	}
	if c.Expected == AnyOutcome {
		return c.Actual == Safe || c.Actual == Unsafe
	}
	return c.Actual == c.Expected
}

// CaseFromResults makes the test case of a finished run.
func CaseFromResults(r Results, expected Outcome, took time.Duration) TestCase {
	return TestCase{Scenario: r.Scenario, Group: r.DesignName(), Expected: expected, Actual: OutcomeOf(r.Verdict),
		Command: r.Command, Duration: took, RunDir: r.Dir, Details: details(r), Locktest: r.Locktest, Servers: r.Servers}
}

// details is the few lines a CI failure message needs.
func details(r Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s check: %s", r.DecidedBy, strings.ToUpper(string(r.Verdict)))
	c := r.Checks
	if r.DecidedBy == checker.ResourceCheck {
		fmt.Fprintf(&b, "; %d lost update(s), %d stale write(s) rejected", c.Stats.Lost, c.Stats.Rejected)
	}
	if r.DecidedBy != checker.MutexCheck {
		fmt.Fprintf(&b, "; mutex check: %s", strings.ToUpper(string(c.Mutex.Verdict)))
	}
	b.WriteString("\n")
	for _, res := range []checker.Result{c.Mutex, c.Resource} {
		if len(res.Violations) == 0 {
			continue
		}
		v := res.Violations[0]
		fmt.Fprintf(&b, "first %s violation: %s", res.Check, v.Summary)
		if len(v.Faults) > 0 {
			fmt.Fprintf(&b, " (fault active: %s)", strings.Join(v.Faults, ", "))
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return strings.TrimSpace(b.String())
}

// Suite is a named group of cases, one <testsuite>.
type Suite struct {
	Name      string
	Timestamp time.Time
	Cases     []TestCase
}

// WriteJUnit writes suites as JUnit XML, the format CI systems (GitHub
// Actions reporters, GitLab, Jenkins) render natively.
func WriteJUnit(w io.Writer, suites ...Suite) error {
	doc := junitSuites{Name: "locktest"}
	for _, s := range suites {
		js := junitSuite{Name: s.Name, Tests: len(s.Cases)}
		if !s.Timestamp.IsZero() {
			js.Timestamp = s.Timestamp.UTC().Format("2006-01-02T15:04:05")
		}
		for _, c := range s.Cases {
			js.Cases = append(js.Cases, junitCaseOf(c))
			js.Time += xmlSeconds(c.Duration.Seconds())
			switch {
			case c.Err != "":
				js.Errors++
			case !c.Passed():
				js.Failures++
			}
		}
		doc.Tests, doc.Failures, doc.Errors, doc.Time = doc.Tests+js.Tests, doc.Failures+js.Failures, doc.Errors+js.Errors, doc.Time+js.Time
		doc.Suites = append(doc.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func junitCaseOf(c TestCase) junitCase {
	group := "locktest"
	if c.Group != "" {
		group += "." + c.Group
	}
	jc := junitCase{Name: c.Scenario, Classname: group, Time: xmlSeconds(c.Duration.Seconds())}
	props := [][2]string{{"expected", string(c.Expected)}, {"actual", string(c.Actual)},
		{"command", c.Command}, {"run_dir", c.RunDir}}
	if c.Locktest.Go != "" {
		props = append(props, [2]string{"locktest", c.Locktest.String()})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		props = append(props, [2]string{"server." + name, c.Servers[name]})
	}
	for _, p := range props {
		if p[1] != "" {
			jc.Properties = append(jc.Properties, junitProperty{Name: p[0], Value: p[1]})
		}
	}
	body := fmt.Sprintf("reproduce: %s\nrun dir: %s\n%s", c.Command, c.RunDir, c.Details)
	switch {
	case c.Err != "":
		jc.Error = &junitProblem{Message: c.Err, Type: "RunError", Body: body}
	case !c.Passed():
		msg := fmt.Sprintf("expected %s, got %s", c.Expected, c.Actual)
		if c.Actual == Undecided {
			msg += " (the checker could not decide)"
		}
		jc.Failure = &junitProblem{Message: msg, Type: "UnexpectedOutcome", Body: body}
	default:
		jc.SystemOut = body
	}
	return jc
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     xmlSeconds   `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      xmlSeconds  `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       xmlSeconds      `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitProblem   `xml:"failure,omitempty"`
	Error      *junitProblem   `xml:"error,omitempty"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// xmlSeconds writes as plain decimal seconds ("12.345"), which every JUnit
// reader parses; encoding/xml would write large or tiny floats with an
// exponent.
type xmlSeconds float64

func (s xmlSeconds) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: fmt.Sprintf("%.3f", float64(s))}, nil
}
