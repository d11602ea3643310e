package runner

import (
	"math"
	"strings"
	"testing"

	"github.com/locktest/locktest/reports"
)

// TestClockDrift: two measurements of a host's offset bound how much
// faster than the control host's its clock ran, uncertainties included;
// the fastest host decides; a host measured once bounds nothing.
func TestClockDrift(t *testing.T) {
	const s = int64(1e9)
	at := func(host, when string, atS, offNs, uNs int64) reports.ClockOffset {
		return reports.ClockOffset{Host: host, When: when, AtUnixNs: atS * s, OffsetNs: offNs, UncertaintyNs: uNs}
	}
	cases := []struct {
		name  string
		offs  []reports.ClockOffset
		drift float64
		note  string
	}{
		{"steady clocks: the uncertainties alone", []reports.ClockOffset{
			at("a", "start", 100, 5e5, 2e5), at("a", "end", 110, 5e5, 3e5)}, 5e5 / 10e9, "lease judged 50 ppm shorter"},
		{"the fastest host decides", []reports.ClockOffset{
			at("a", "start", 100, 0, 1e5), at("b", "start", 100, 0, 1e5),
			at("a", "end", 200, 1e6, 1e5), at("b", "end", 200, -5e6, 1e5)}, 5.2e6 / 100e9, "(host b:"},
		{"a host measured once", []reports.ClockOffset{
			at("a", "start", 100, 0, 1e5), at("a", "end", 200, 0, 1e5), at("b", "start", 100, 0, 1e5)}, 0,
			"host b's clock was not measured at both ends"},
		{"a measurement that failed", []reports.ClockOffset{
			at("a", "start", 100, 0, 1e5), {Host: "a", When: "end", Error: "connection closed"}}, 0,
			"host a's clock was not measured at both ends"},
		{"no hosts", nil, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			drift, note := clockDrift(tc.offs)
			if math.Abs(drift-tc.drift) > 1e-12 {
				t.Errorf("drift %g, want %g", drift, tc.drift)
			}
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("note %q, want one saying %q", note, tc.note)
			}
		})
	}
}
