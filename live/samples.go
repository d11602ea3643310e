package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/locktest/locktest/reports"
)

// tailBytes is how much of the end of the samples file latestSample
// reads: several samples of a run with dozens of servers.
const tailBytes = 64 << 10

// LatestSample is the newest whole sample of f (a run's
// reports.SamplesFile), read from its end: a long run's file is a
// megabyte, and a display reads it twice a second. ok is false while the
// run has none.
func LatestSample(f *os.File) (s reports.Sample, ok bool) {
	info, err := f.Stat()
	if err != nil {
		return s, false
	}
	off := max(0, info.Size()-tailBytes)
	tail := make([]byte, info.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil && err != io.EOF {
		return s, false
	}
	// The last line may be being written; the one before it is whole.
	lines := bytes.Split(bytes.TrimRight(tail, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-2; i-- {
		if json.Unmarshal(lines[i], &s) == nil {
			return s, true
		}
	}
	return reports.Sample{}, false
}

// latestSample is LatestSample of the file at path.
func latestSample(path string) (reports.Sample, bool) {
	f, err := os.Open(path)
	if err != nil {
		return reports.Sample{}, false
	}
	defer f.Close()
	return LatestSample(f)
}

// MemoryText says the memory of a sample in a few words for a status
// line: "coordinator 45 MB, 2 server(s) 24 MB" (the servers' summed;
// those that could not be read are left out).
func MemoryText(s reports.Sample) string {
	var coord, servers int64
	var n int
	for _, p := range s.Procs {
		switch {
		case p.Error != "":
		case p.Name == reports.CoordinatorName:
			coord = p.RSS
		default:
			servers += p.RSS
			n++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "coordinator %d MB", coord>>20)
	if n > 0 {
		fmt.Fprintf(&b, ", %d server(s) %d MB", n, servers>>20)
	}
	return b.String()
}
