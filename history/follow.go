package history

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
)

// Follower reads a history while its run still writes it: each Poll
// returns the records whose lines were completed since the previous one.
// The Writer flushes every record, so a follower sees a run as it goes
// (locktest run's progress, a suite's status line) without waiting for
// its end.
type Follower struct {
	path string
	off  int64
	rest []byte // a line not yet complete
	dec  decoder
}

// Follow returns a follower of the history at path, which need not exist
// yet: a run creates it once its directory is made.
func Follow(path string) *Follower { return &Follower{path: path} }

// Poll returns the records appended since the last call. A file not yet
// created has none. A complete line that does not parse is skipped: a
// progress display is no judge of a damaged history, the checker is.
func (f *Follower) Poll() ([]Record, error) {
	// From where the last poll ended, across the segments closed since.
	file, err := Open(f.path, f.off)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(file)
	f.off += int64(len(data))
	f.rest = append(f.rest, data...)
	var recs []Record
	for {
		nl := bytes.IndexByte(f.rest, '\n')
		if nl < 0 {
			break
		}
		if line := bytes.TrimSpace(f.rest[:nl]); len(line) > 0 {
			var r Record
			if f.dec.decode(line, &r) == nil {
				recs = append(recs, r)
			}
		}
		f.rest = f.rest[nl+1:]
	}
	// Keep the partial line in a buffer of its own, so that the one read
	// above is not held alive by it.
	f.rest = append([]byte(nil), f.rest...)
	return recs, err
}
