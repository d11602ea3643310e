package cluster

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"sync"
)

// LogLimit is the most a worker's or a server's log keeps. A program that
// spams its stderr (`yes >&2`) would otherwise fill the disk within
// minutes; the start of a log is what explains a failure.
const LogLimit = 10 << 20

// truncatedNote ends a log that dropped output; TruncatedBytes reads it back.
const truncatedNote = "\n[truncated: %d bytes dropped]\n"

var truncatedRe = regexp.MustCompile(`\n\[truncated: (\d+) bytes dropped\]\n$`)

// CappedLog is a log file that keeps its first limit bytes and counts the
// rest, noting the count at its end when closed. Processes write to it
// through a pipe, so it never blocks nor fails them.
type CappedLog struct {
	path    string
	mu      sync.Mutex
	f       *os.File
	size    int64
	limit   int64
	dropped int64
}

// OpenCappedLog opens (appending) or creates the log at path. A log that
// already ends with a truncation note (a client's earlier process) drops
// that note and goes on counting from it.
func OpenCappedLog(path string, limit int64) (*CappedLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	l := &CappedLog{path: path, f: f, limit: limit}
	if l.size, l.dropped, err = dropNote(f); err == nil {
		_, err = f.Seek(l.size, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	return l, nil
}

// dropNote cuts a trailing truncation note off f and returns f's size
// without it and the count it held.
func dropNote(f *os.File) (size, dropped int64, err error) {
	size, dropped, err = readNote(f)
	if err != nil || dropped == 0 {
		return size, dropped, err
	}
	return size, dropped, f.Truncate(size)
}

// readNote returns the size of f without a trailing truncation note, and
// the count the note holds (0: no note).
func readNote(f *os.File) (size, dropped int64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	start := max(0, st.Size()-64) // a note is shorter
	tail := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(tail, start); err != nil && err != io.EOF {
		return 0, 0, err
	}
	m := truncatedRe.FindSubmatchIndex(tail)
	if m == nil {
		return st.Size(), 0, nil
	}
	dropped, err = strconv.ParseInt(string(tail[m[2]:m[3]]), 10, 64)
	return start + int64(m[0]), dropped, err
}

// Write keeps what fits under the limit and counts the rest. It never
// fails: a full disk must not break the process that logs.
func (l *CappedLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := min(int64(len(b)), max(0, l.limit-l.size))
	if keep > 0 && l.f != nil {
		n, _ := l.f.Write(b[:keep])
		l.size += int64(n)
	}
	l.dropped += int64(len(b)) - keep
	return len(b), nil
}

// Name is the log's path.
func (l *CappedLog) Name() string { return l.path }

// Close notes how much was dropped, if anything, and closes the file.
func (l *CappedLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	var err error
	if l.dropped > 0 {
		_, err = fmt.Fprintf(l.f, truncatedNote, l.dropped)
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// TruncatedBytes reads how many bytes the log at path dropped: 0 unless
// it ends with a truncation note.
func TruncatedBytes(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	_, dropped, err := readNote(f)
	return dropped, err
}
