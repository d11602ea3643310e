package suite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/runner"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/workloads"
)

// File is a loaded and validated suite: every scenario resolved for every
// seed, so nothing can be refused once runs have started.
type File struct {
	Path string
	Name string
	// Digest is the SHA-256 of the file's bytes: shards of one suite are
	// merged only when they ran the same file, wherever it was checked out.
	Digest    string
	Scenarios []*Scenario
	// Matrix lists the cells of the file's matrix block: the design ×
	// fault pairs it promises to run, each by a scenario of Scenarios.
	Matrix []Cell
	// Sweeps are the file's envelopes block: how big a fault each design
	// survives, measured after the scenarios.
	Sweeps []Sweep
}

// Scenario is one entry of a suite: a configuration run once per seed, and
// what every one of those runs must show.
type Scenario struct {
	Name string
	// Anomalies are the docs/anomalies.md rows the scenario encodes.
	Anomalies []string
	Seeds     []int64
	Expect    Expect
	// Runs holds the resolved configuration of each seed, in Seeds order.
	Runs []runner.Resolved
	Line int
	// Unmeasured marks a matrix cell no scenario overrides: it runs at the
	// matrix's default expectation, since nobody wrote down what it shows.
	Unmeasured bool
	// StopEarly ends each run at the first violation when that settles
	// the expectation (Expect.stopChecks); other runs go to their end.
	StopEarly bool
}

// Error is a mistake in a suite file. It names the file, the line and the
// field, so that the one line printed is enough to fix it.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return loc + ": " + e.Msg
}

// Load reads and validates a suite file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the suite file: %v", err)}
	}
	return Parse(path, data)
}

// Fields a scenario takes besides the run's settings.
var scenarioFields = []string{"name", "anomaly", "seeds", "expect", "stop_early"}

// settingFields maps the name of each run setting a scenario takes to the
// setting: every one of scenario.Settings with a name, but seed (seeds gives
// it), scenario (name gives it) and stop_on_violation (stop_early derives
// it from the expectation, which alone knows which checks settle it).
var settingFields = func() map[string]scenario.Setting {
	m := map[string]scenario.Setting{}
	for _, s := range scenario.Settings {
		if name := s.Name(); name != "" && name != "seed" && name != "scenario" && name != "stop_on_violation" {
			m[name] = s
		}
	}
	return m
}()

func validScenarioFields(withName bool) []string {
	var names []string
	for n := range settingFields {
		names = append(names, n)
	}
	for _, n := range scenarioFields {
		if n != "name" || withName {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parser carries the file name into every error, and the file's
// fault_durations into every scenario.
type parser struct {
	path string
	// durations is how long a run lasts under each fault, for scenarios
	// that do not give their own duration.
	durations map[string]scenario.Duration
}

func (p parser) errAt(n *yaml.Node, field, format string, args ...any) *Error {
	e := &Error{File: p.path, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// pair is one key of a mapping with its value.
type pair struct {
	key, val *yaml.Node
	path     string // e.g. scenarios[2].faults
}

// pairs returns a mapping's keys in order, refusing duplicates and keys
// not in valid.
func (p parser) pairs(n *yaml.Node, path string, valid []string) ([]pair, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, path, "want a mapping of %s", strings.Join(valid, ", "))
	}
	var out []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := k.Value
		if path != "" {
			field = path + "." + k.Value
		}
		if !slices.Contains(valid, k.Value) {
			return nil, p.errAt(k, field, "unknown field (valid: %s)", strings.Join(valid, ", "))
		}
		if line, dup := seen[k.Value]; dup {
			return nil, p.errAt(k, field, "given twice (first on line %d)", line)
		}
		seen[k.Value] = k.Line
		out = append(out, pair{key: k, val: v, path: field})
	}
	return out, nil
}

// Parse validates a suite from its text; path names it in errors.
func Parse(path string, data []byte) (*File, error) {
	p := parser{path: path}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &Error{File: path, Line: line, Msg: "not valid YAML: " + m[2]}
		}
		return nil, &Error{File: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: path, Msg: "empty suite: give a mapping with scenarios: [...] or a matrix"}
	}
	top, err := p.pairs(doc.Content[0], "", []string{"name", "defaults", "fault_durations", "matrix", "scenarios", "envelopes"})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	f := &File{Path: path, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Digest: hex.EncodeToString(sum[:])}
	var defaults []pair
	var list, matrix, envelopes *pair
	for _, kv := range top {
		switch kv.key.Value {
		case "name":
			if f.Name, err = p.name(kv); err != nil {
				return nil, err
			}
		case "defaults":
			if defaults, err = p.pairs(kv.val, "defaults", validScenarioFields(false)); err != nil {
				return nil, err
			}
		case "fault_durations":
			if p.durations, err = p.faultDurations(kv); err != nil {
				return nil, err
			}
		case "matrix":
			matrix = &kv
		case "scenarios":
			list = &kv
		case "envelopes":
			envelopes = &kv
		}
	}
	if list == nil && matrix == nil && envelopes == nil {
		return nil, p.errAt(doc.Content[0], "scenarios", "missing: give a list of scenarios, a matrix, or envelopes")
	}
	var explicit []*yaml.Node
	if list != nil {
		if list.val.Kind != yaml.SequenceNode || len(list.val.Content) == 0 {
			return nil, p.errAt(list.val, "scenarios", "want a non-empty list of scenarios")
		}
		explicit = list.val.Content
	}
	names := map[string]int{}
	for i, n := range explicit {
		sc, err := p.scenario(n, fmt.Sprintf("scenarios[%d]", i), defaults)
		if err != nil {
			return nil, err
		}
		if line, dup := names[sc.Name]; dup {
			return nil, p.errAt(n, fmt.Sprintf("scenarios[%d].name", i), "%q is taken by the scenario on line %d: names must be unique", sc.Name, line)
		}
		names[sc.Name] = sc.Line
		f.Scenarios = append(f.Scenarios, sc)
	}
	if matrix != nil {
		if err := p.expandMatrix(f, *matrix, defaults); err != nil {
			return nil, err
		}
	}
	if envelopes != nil {
		if err := p.envelopes(f, *envelopes, defaults); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// faultDurations reads the fault_durations block: a run length for each
// fault named. A suite's runs cost their duration, and the length that
// finds a fault's anomaly differs by fault (a pause shows at its first
// strike, a failover needs several): measured per fault, the whole suite
// stays short without cutting any fault's search below what it needs.
func (p parser) faultDurations(kv pair) (map[string]scenario.Duration, error) {
	if kv.val.Kind != yaml.MappingNode {
		return nil, p.errAt(kv.val, kv.path, "want a mapping of fault names to durations, e.g. {pause-holder: 6s}")
	}
	out := map[string]scenario.Duration{}
	for i := 0; i+1 < len(kv.val.Content); i += 2 {
		k, v := kv.val.Content[i], kv.val.Content[i+1]
		field := kv.path + "." + k.Value
		if _, err := faults.Lookup(k.Value); err != nil {
			return nil, p.errAt(k, field, "%v", err)
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errAt(k, field, "given twice: list each fault once")
		}
		var d scenario.Duration
		if v.Kind != yaml.ScalarNode || d.Set(v.Value) != nil || d <= 0 {
			return nil, p.errAt(v, field, "want a positive duration such as 10s, 500ms or 2m")
		}
		out[k.Value] = d
	}
	return out, nil
}

// faultDuration is the longest of fault_durations' lengths for the given
// faults, if it names any: a run must be long enough for each of them.
func (p parser) faultDuration(names []string) (scenario.Duration, bool) {
	var longest scenario.Duration
	for _, name := range names {
		longest = max(longest, p.durations[name])
	}
	return longest, longest > 0
}

func (p parser) name(kv pair) (string, error) {
	if kv.val.Kind != yaml.ScalarNode {
		return "", p.errAt(kv.val, kv.path, "want a name (it names a directory)")
	}
	if err := runner.CheckName(kv.val.Value); err != nil {
		return "", p.errAt(kv.val, kv.path, "%v", err)
	}
	return kv.val.Value, nil
}

// scenario decodes one scenario over the defaults and resolves it for
// every seed.
func (p parser) scenario(n *yaml.Node, path string, defaults []pair) (*Scenario, error) {
	own, err := p.pairs(n, path, validScenarioFields(true))
	if err != nil {
		return nil, err
	}
	sc := &Scenario{Seeds: []int64{1}, Line: n.Line}
	cfg := scenario.Defaults()
	// where remembers which pair set each field, to point errors at it.
	where := map[string]pair{}
	var expect *Expect
	for _, kv := range append(slices.Clone(defaults), own...) {
		where[kv.key.Value] = kv
		if err := p.field(kv, sc, &cfg, &expect); err != nil {
			return nil, err
		}
	}
	at := func(field string) (*yaml.Node, string) {
		if kv, ok := where[field]; ok {
			return kv.key, kv.path
		}
		return n, path
	}
	if sc.Name == "" {
		return nil, p.errAt(n, path+".name", "missing: every scenario needs a unique name")
	}
	if expect == nil {
		return nil, p.errAt(n, path+".expect", "missing: give safe, unsafe, or a liveness bound such as {max_recovery: 2s}")
	}
	sc.Expect = *expect
	if cfg.Impl == "" {
		return nil, p.errAt(n, path+".impl", "missing (valid: %s)", strings.Join(impls.Names(), ", "))
	}
	design, err := runner.LookupDesign(cfg)
	if err != nil {
		return nil, p.resolveError(err, at, "impl")
	}
	workload, err := workloads.Lookup(cfg.Workload)
	if err != nil {
		node, field := at("workload")
		return nil, p.errAt(node, field, "%v", err)
	}
	if sc.StopEarly {
		cfg.StopOnViolation = sc.Expect.stopChecks(workload)
	}
	// fault_durations says how long to look where no violation is
	// expected. A run that must find one keeps the defaults' duration:
	// stopped at the violation (stop_early), it costs only the time to
	// find it and its duration is a limit; run to its end (a fenced design
	// whose data stays safe), a shorter run would miss more often.
	if !sc.Expect.needsViolation() && !slices.ContainsFunc(own, func(kv pair) bool { return kv.key.Value == "duration" }) {
		if d, ok := p.faultDuration(faults.MemberNames(cfg.Faults)); ok {
			cfg.Duration = d
		}
	}
	if len(cfg.Faults) == 0 {
		node, field := at("faults")
		return nil, p.errAt(node, field, "give at least one fault, or none (valid: %s)", strings.Join(faults.Names(), ", "))
	}
	for _, item := range cfg.Faults {
		node, field := at("faults")
		members, err := faults.LookupItem(item)
		if err != nil {
			return nil, p.errAt(node, field, "%v", err)
		}
		for _, fault := range members {
			if err := fault.Applies(design, faultWorkload(cfg.Workload)); err != nil {
				return nil, p.errAt(node, field, "fault %s does not apply to impl %s: %v", fault.Name(), cfg.Impl, err)
			}
		}
	}
	cfg.Scenario = sc.Name
	for _, seed := range sc.Seeds {
		cfg.Seed = seed
		r, err := runner.Resolve(cfg)
		if err != nil {
			return nil, p.resolveError(err, at, "")
		}
		sc.Runs = append(sc.Runs, r)
	}
	return sc, nil
}

// resolveError restates the runner's complaint, which names CLI flags, in
// the suite's field names and points at the line that set the first field
// it names, or else field's.
func (p parser) resolveError(err error, at func(string) (*yaml.Node, string), field string) error {
	msg, first := scenario.FieldTerms(err.Error())
	if first != "" {
		field = first
	}
	node, path := at(field)
	return p.errAt(node, path, "%s", msg)
}

// field decodes one key of a scenario (or of the defaults).
func (p parser) field(kv pair, sc *Scenario, cfg *scenario.Config, expect **Expect) error {
	v := kv.val
	switch kv.key.Value {
	case "name":
		name, err := p.name(kv)
		sc.Name = name
		return err
	case "anomaly":
		rows, err := p.strings(v, kv.path)
		sc.Anomalies = rows
		return err
	case "seeds":
		return p.seeds(kv, sc)
	case "stop_early":
		return p.boolean(v, kv.path, &sc.StopEarly)
	case "expect":
		e, err := p.expect(v, kv.path)
		*expect = e
		return err
	}
	switch dst := settingFields[kv.key.Value].Ptr(cfg).(type) {
	case *scenario.Duration:
		if v.Kind != yaml.ScalarNode || dst.Set(v.Value) != nil {
			return p.errAt(v, kv.path, "want a duration such as 10s, 500ms or 2m")
		}
	case *string:
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			return p.errAt(v, kv.path, "want a name")
		}
		*dst = v.Value
	case *int:
		i, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil {
			return p.errAt(v, kv.path, "want a whole number, got %q", v.Value)
		}
		*dst = i
	case *float64:
		f, err := strconv.ParseFloat(v.Value, 64)
		if v.Kind != yaml.ScalarNode || err != nil {
			return p.errAt(v, kv.path, "want a number, got %q", v.Value)
		}
		*dst = f
	case *bool:
		return p.boolean(v, kv.path, dst)
	case *[]string:
		list, err := p.strings(v, kv.path)
		if err != nil {
			return err
		}
		*dst = list
	default:
		if err := v.Decode(dst); err != nil {
			return p.errAt(v, kv.path, "cannot read as %T", dst)
		}
	}
	return nil
}

func (p parser) boolean(v *yaml.Node, path string, b *bool) error {
	if v.Kind != yaml.ScalarNode || v.Decode(b) != nil {
		return p.errAt(v, path, "want true or false")
	}
	return nil
}

// strings reads a list of names, or one name, or a comma-separated line.
func (p parser) strings(v *yaml.Node, path string) ([]string, error) {
	var out []string
	switch v.Kind {
	case yaml.ScalarNode:
		list, err := scenario.SplitList(v.Value)
		if err != nil {
			return nil, p.errAt(v, path, "%v", err)
		}
		out = list
	case yaml.SequenceNode:
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode || e.Value == "" {
				return nil, p.errAt(e, path, "want a list of names")
			}
			out = append(out, e.Value)
		}
	default:
		return nil, p.errAt(v, path, "want a name or a list of names")
	}
	return out, nil
}

func (p parser) seeds(kv pair, sc *Scenario) error {
	v := kv.val
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return p.errAt(v, kv.path, "want a non-empty list of seeds, e.g. [1, 2, 3]")
	}
	sc.Seeds = nil
	for _, e := range v.Content {
		s, err := strconv.ParseInt(e.Value, 10, 64)
		if e.Kind != yaml.ScalarNode || err != nil {
			return p.errAt(e, kv.path, "want a whole number, got %q", e.Value)
		}
		if slices.Contains(sc.Seeds, s) {
			return p.errAt(e, kv.path, "seed %d given twice", s)
		}
		sc.Seeds = append(sc.Seeds, s)
	}
	return nil
}
