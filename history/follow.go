package history

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Follower reads a history while its run still writes it: each Read (or
// Poll) gives the records whose lines were completed since the previous
// one. The Writer flushes every record, so a follower sees a run as it
// goes (locktest run's progress, a suite's status line, serve's pages)
// without waiting for its end.
type Follower struct {
	fsys fs.FS
	name string
	off  int64
	rest []byte // a line not yet complete
	dec  decoder
}

// followChunk is how much a Read takes at a time: a follower that comes
// late to a night's history (serve opened after hours) does not hold it
// whole.
const followChunk = 4 << 20

// Follow returns a follower of the history at path, which need not exist
// yet: a run creates it once its directory is made.
func Follow(path string) *Follower {
	return FollowFS(os.DirFS(filepath.Dir(path)), filepath.Base(path))
}

// FollowFS is Follow of the history called name in fsys (serve reads the
// store through an os.Root).
func FollowFS(fsys fs.FS, name string) *Follower { return &Follower{fsys: fsys, name: name} }

// Read calls fn with each record appended since the last call, in order;
// fn must not keep the record. A file not yet created has none. A
// complete line that does not parse is skipped: a progress display is no
// judge of a damaged history, the checker is.
func (f *Follower) Read(fn func(*Record)) error {
	// From where the last read ended, across the segments closed since.
	file, err := OpenFS(f.fsys, f.name, f.off)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	buf := make([]byte, followChunk)
	for {
		n, err := io.ReadFull(file, buf)
		f.off += int64(n)
		f.rest = append(f.rest, buf[:n]...)
		lines := f.rest
		for {
			nl := bytes.IndexByte(lines, '\n')
			if nl < 0 {
				break
			}
			if line := bytes.TrimSpace(lines[:nl]); len(line) > 0 {
				var r Record
				if f.dec.decode(line, &r) == nil {
					fn(&r)
				}
			}
			lines = lines[nl+1:]
		}
		// Keep the partial line in a buffer of its own, so that the one
		// read is not held alive by it.
		f.rest = append([]byte(nil), lines...)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Poll returns the records appended since the last call (Read).
func (f *Follower) Poll() ([]Record, error) {
	var recs []Record
	err := f.Read(func(r *Record) { recs = append(recs, *r) })
	return recs, err
}
