package history

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeSegmented writes n records through a Writer whose segments close
// every limit bytes, and returns them as appended.
func writeSegmented(t *testing.T, path string, n int, limit int64) []Record {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.limit = limit
	var want []Record
	for i := range n {
		want = append(want, w.Append(Record{Process: i % 5, Seq: i, Type: Invoke, F: FAcquire, Key: "k", Time: int64(i)}))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

func TestSegmentsReadAsOneHistory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	want := writeSegmented(t, path, 5000, 32<<10)

	entries, _ := os.ReadDir(dir)
	var gz, raw int
	for _, e := range entries {
		switch {
		case strings.HasSuffix(e.Name(), gzSuffix):
			gz++
		case e.Name() != "history.jsonl":
			raw++ // neither a raw segment nor a .tmp may be left
		}
	}
	if gz < 5 || raw != 0 {
		t.Fatalf("%d compressed segments and %d other files; want several of the first, none of the rest: %v", gz, raw, entries)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, func(a, b Record) bool { return a.Index == b.Index && a.Time == b.Time }) {
		t.Fatalf("read %d records, wrote %d, or out of order", len(got), len(want))
	}
	size, err := Size(path)
	if err != nil {
		t.Fatal(err)
	}

	// An offset into the stream, as Each gave it, reads from that record
	// on, whichever segment it falls in; past the end reads nothing.
	f, _ := Open(path, 0)
	var offsets []int64
	if err := Each(f, func(_ *Record, off int64) error { offsets = append(offsets, off); return nil }); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, i := range []int{0, 1, 700, 2500, len(want) - 1} {
		f, err := Open(path, offsets[i])
		if err != nil {
			t.Fatal(err)
		}
		recs, err := Read(f)
		f.Close()
		if err != nil || len(recs) != len(want)-i || recs[0].Index != want[i].Index {
			t.Fatalf("from record %d's offset: %d records (want %d), err %v", i, len(recs), len(want)-i, err)
		}
	}
	f, _ = Open(path, size)
	if rest, _ := io.ReadAll(f); len(rest) != 0 {
		t.Fatalf("past the end: %d bytes", len(rest))
	}
	f.Close()
}

// A follower polling while segments close sees every record once, in order.
func TestFollowAcrossSegments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.limit = 16 << 10
	fl := Follow(path)
	var seen []int
	poll := func() {
		recs, err := fl.Poll()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			seen = append(seen, r.Index)
		}
	}
	for i := range 3000 {
		w.Append(Record{Process: 1, Seq: i, Type: Invoke, F: FAcquire, Key: "k", Time: int64(i)})
		if i%97 == 0 {
			w.Flush()
			poll()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	poll()
	for i, idx := range seen {
		if idx != i {
			t.Fatalf("record %d seen as index %d (%d seen)", i, idx, len(seen))
		}
	}
	if len(seen) != 3000 {
		t.Fatalf("saw %d records, want 3000", len(seen))
	}
}

// A coordinator killed mid-compression leaves the raw segment and a .tmp:
// the history reads whole from them.
func TestSegmentKilledWhileCompressed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	want := writeSegmented(t, path, 2000, 16<<10)
	seg := segmentName(path, 1)
	zipped, err := os.ReadFile(seg + gzSuffix)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := Open(path, 0)
	all, _ := io.ReadAll(f)
	f.Close()
	// The first segment back as it was before compression, with half a
	// compressed copy beside it.
	rawSize, _ := pieceSize(os.DirFS(dir), piece{name: filepath.Base(seg) + gzSuffix, gz: true})
	os.WriteFile(seg, all[:rawSize], 0o644)
	os.Remove(seg + gzSuffix)
	os.WriteFile(seg+gzSuffix+tmpSuffix, zipped[:len(zipped)/2], 0o644)
	got, err := ReadFile(path)
	if err != nil || len(got) != len(want) {
		t.Fatalf("read %d of %d records, err %v", len(got), len(want), err)
	}
}
