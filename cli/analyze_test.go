package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktest/locktest/history/historytest"
	"github.com/locktest/locktest/reports"
)

// TestAnalyzeUnregisteredDesign: analyze checks a run of a design this
// binary does not have (one registered in a user's own main, or in a test
// under locktesting) from its history and config.json alone, with the
// verdict the history holds, and keeps the run's own reproduce command
// instead of inventing a locktest command that would not know the design.
// A config.json that names a design this binary lacks and does not
// describe it (a run stored before designs were, or an edited name) is
// refused: nothing says the run was of a real design.
func TestAnalyzeUnregisteredDesign(t *testing.T) {
	const reproduce = "go test -run '^TestMyLock$' -count=1 example.com/mylock"
	cases := []struct {
		name   string
		extra  string // config.json fields beyond the settings
		lost   int
		code   int
		report bool
	}{
		{"described, lost update", `"design": {"binaries": {"redis-server": "redis-server"}}, "reproduce": "` + reproduce + `",`, 1, exitInvalid, true},
		{"described, safe", `"design": {}, "reproduce": "` + reproduce + `",`, 0, exitValid, false},
		{"not described", ``, 1, exitBadArgs, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			config := `{"impl": "user-lock-not-registered", "workload": "counter", "faults": ["pause-holder"], "clients": 3,` +
				tc.extra + ` "scenario": "user-lock_counter_pause-holder"}`
			if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(filepath.Join(dir, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			err = historytest.Counter{Clients: 3, Keys: 1, Ops: 90, Seed: 1, Overlaps: tc.lost}.Write(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"analyze", "--no-report", dir}
			if tc.report {
				args = []string{"analyze", dir}
			}
			var stdout, stderr bytes.Buffer
			if code := Main(args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout.String(), stderr.String())
			}
			if tc.code == exitBadArgs {
				if want := "field impl"; !strings.Contains(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 || stdout.Len() > 0 {
					t.Errorf("refusal is not one line naming %s:\n%s%s", want, stdout.String(), stderr.String())
				}
				return
			}
			if want := "user-lock_counter_pause-holder"; !strings.Contains(stdout.String(), want) {
				t.Errorf("summary does not name the scenario %s:\n%s", want, stdout.String())
			}
			if !tc.report {
				// Nothing was ever written: no report to point at, no
				// files of an earlier check.
				for _, untrue := range []string{reports.ReportFile, "earlier check"} {
					if strings.Contains(stdout.String(), untrue) {
						t.Errorf("--no-report on a run with no report says %q:\n%s", untrue, stdout.String())
					}
				}
				return
			}
			data, err := os.ReadFile(filepath.Join(dir, reports.ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			var res reports.Results
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatal(err)
			}
			if res.Command != reproduce {
				t.Errorf("results.json command %q, want the run's own %q", res.Command, reproduce)
			}
			if res.Checks.Stats.Lost != tc.lost {
				t.Errorf("%d lost updates, want %d", res.Checks.Stats.Lost, tc.lost)
			}
		})
	}
}
