package suite

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locktest/locktest/runner"
)

// ReadReport reads the suite.json of a suite's output directory.
func ReadReport(dir string) (Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		return Report{}, fmt.Errorf("read suite report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return Report{}, fmt.Errorf("read suite report %s: %w", filepath.Join(dir, ReportFile), err)
	}
	return r, nil
}

// Merge combines the outputs of suite run --shard, one directory each, into
// the report one whole run would have made, with out as its directory
// (nothing is written: see WriteMerged). Outputs of different suite files,
// selections or builds, duplicate shards and outputs that are not shards
// are refused as *runner.BadConfigError; missing shards are not: the
// report lists them in Missing and does not pass. Each run's directory is
// found under the shard directory given, wherever the shard ran.
func Merge(dirs []string, out string) (Report, error) {
	bad := func(format string, args ...any) (Report, error) {
		return Report{}, &runner.BadConfigError{Err: fmt.Errorf(format, args...)}
	}
	if len(dirs) == 0 {
		return bad("give the output directories of suite run --shard, e.g. shard-1 shard-2")
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return bad("--out %s exists and is not empty: give a new directory", out)
	}
	var merged Report
	var shard Shard // the first's: every other must agree
	seen := map[int]string{}
	var end time.Time
	for i, dir := range dirs {
		r, err := ReadReport(dir)
		if err != nil {
			return bad("%s: not a suite output: %w", dir, errors.Unwrap(err))
		}
		if r.Shard == nil {
			return bad("%s: not the output of suite run --shard (it ran the whole suite)", dir)
		}
		if i == 0 {
			merged, shard = r, *r.Shard
			merged.Shard, merged.Outcomes, merged.Envelopes = nil, nil, nil
		} else if why := differs(merged, r, shard, dirs[0]); why != "" {
			return bad("%s: %s", dir, why)
		}
		if other, dup := seen[r.Shard.Index]; dup {
			return bad("%s and %s are both shard %s", other, dir, r.Shard)
		}
		seen[r.Shard.Index] = dir
		for _, o := range r.Outcomes {
			if o.Dir != "" {
				if o.Dir, err = rebase(dir, o, o.Status == Pass || o.Status == Fail); err != nil {
					return bad("%w", err)
				}
			}
			merged.Outcomes = append(merged.Outcomes, o)
		}
		for _, e := range r.Envelopes {
			// Where the shard ran it: found again under the directory given.
			if e.Dir, err = filepath.Abs(filepath.Join(dir, EnvelopesDir, filepath.Base(e.Dir))); err != nil {
				return bad("%s: %w", dir, err)
			}
			if _, err := os.Stat(e.Dir); err != nil && e.Status == Pass {
				return bad("%s: lacks the directory of %s (%s): give the whole shard output", dir, e.Name, e.Dir)
			}
			merged.Envelopes = append(merged.Envelopes, e)
		}
		merged.Merged = append(merged.Merged, dir)
		merged.Parallel = max(merged.Parallel, r.Parallel)
		merged.Interrupted = merged.Interrupted || r.Interrupted
		end = later(end, r.Started.Add(time.Duration(r.WallSeconds*float64(time.Second))))
		if r.Started.Before(merged.Started) {
			merged.Started = r.Started
		}
	}
	for i := 1; i <= shard.Count; i++ {
		if _, ok := seen[i]; !ok {
			merged.Missing = append(merged.Missing, i)
		}
	}
	slices.SortFunc(merged.Outcomes, func(a, b Outcome) int { return cmp.Compare(a.Index, b.Index) })
	settleAnySeed(merged.Outcomes)
	slices.SortFunc(merged.Envelopes, func(a, b SweepOutcome) int { return cmp.Compare(a.Name, b.Name) })
	merged.Out = out
	merged.WallSeconds = end.Sub(merged.Started).Seconds()
	return merged, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// differs says why shard r cannot be merged with the first, or "".
func differs(first, r Report, shard Shard, firstDir string) string {
	for _, c := range []struct{ what, a, b string }{
		{"suite file", first.Digest, r.Digest},
		{"locktest build", first.Build.String(), r.Build.String()},
		{"--seeds", fmt.Sprint(first.Seeds), fmt.Sprint(r.Seeds)},
		{"--run", first.Filter, r.Filter},
		{"--backend", first.Backend, r.Backend},
		{"split", fmt.Sprintf("%d shards of %d runs", shard.Count, shard.Runs), fmt.Sprintf("%d shards of %d runs", r.Shard.Count, r.Shard.Runs)},
	} {
		if c.a != c.b {
			return fmt.Sprintf("ran with another %s than %s (%s, not %s): shards merge only from one suite file, build and selection",
				c.what, firstDir, short(c.b), short(c.a))
		}
	}
	return ""
}

func short(s string) string {
	if len(s) == 64 && !strings.ContainsAny(s, " /") { // a digest
		return "sha256 " + s[:12]
	}
	return fmt.Sprintf("%q", s)
}

// rebase finds a run's directory under dir, the shard's output as given to
// merge: the path suite.json recorded is where the shard ran (another CI
// job's disk). A finished run's directory must be there: the comparison
// reads its results.
func rebase(dir string, o Outcome, finished bool) (string, error) {
	sep := string(filepath.Separator)
	key := sep + RunsDir + sep + runKey(o.Scenario, o.Seed) + sep
	at := strings.LastIndex(o.Dir, key)
	if at < 0 {
		return "", fmt.Errorf("%s: run directory %s of %s seed %d is not under runs/", dir, o.Dir, o.Scenario, o.Seed)
	}
	// Absolute, as a run records it: the comparison links to it relative
	// to the merge's output.
	moved, err := filepath.Abs(filepath.Join(dir, o.Dir[at+1:]))
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if _, err := os.Stat(moved); err != nil && finished {
		return "", fmt.Errorf("%s: lacks the run directory of %s seed %d (%s): give the whole shard output", dir, o.Scenario, o.Seed, o.Dir[at+1:])
	}
	return moved, nil
}

// WriteMerged writes a merge's reports into r.Out: into a temporary
// directory beside it first, renamed to r.Out once every file is written,
// so that a merge that fails leaves no half-written output.
func (r Report) WriteMerged() error {
	parent := filepath.Dir(filepath.Clean(r.Out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(r.Out)+".merging-")
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := r.Write(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	// MkdirTemp makes it 0700; the output is as readable as a run's.
	if err := errors.Join(os.Chmod(tmp, 0o755), os.Rename(tmp, r.Out)); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}
