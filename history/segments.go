package history

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SegmentBytes is how long the file a Writer appends to grows before it is
// closed as a segment and compressed: a soak's history is some 60 MB an
// hour, and JSON Lines of records compress about tenfold, so a night's
// directory holds a few small segments and one live file instead of half a
// gigabyte. A run shorter than that never has a segment. Segments are the
// history file's name with a number (history.jsonl.000001.gz); every
// reader of a history (ReadFile, Open, Follow) reads them first, in order,
// as one stream, and an offset into a history is into that stream.
const SegmentBytes = 64 << 20

// gzSuffix ends a compressed segment's name; tmpSuffix one being written.
const (
	gzSuffix  = ".gz"
	tmpSuffix = ".tmp"
)

// segmentName is the name of a history's nth closed segment, before it is
// compressed.
func segmentName(name string, n int) string { return fmt.Sprintf("%s.%06d", name, n) }

// piece is one file of a history's stream: a closed segment, raw or
// compressed, or the live file.
type piece struct {
	name string
	gz   bool
	size int64 // of its records, uncompressed
}

// pieces lists the files the history called name in fsys is read from, in
// order, with their sizes. The live file missing is fs.ErrNotExist unless
// there are segments (a writer between closing one and creating the next).
func pieces(fsys fs.FS, name string) ([]piece, error) {
	dir, base := path.Dir(name), path.Base(name)
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	// A segment is raw until its compressed copy is complete; then the raw
	// one is removed. Both may be seen for a moment: either reads the same.
	byNumber := map[int]piece{}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || strings.HasSuffix(rest, tmpSuffix) {
			continue
		}
		digits, gz := strings.CutSuffix(rest, gzSuffix)
		n, err := strconv.Atoi(digits)
		if err != nil || len(digits) != 6 {
			continue
		}
		if p, seen := byNumber[n]; !seen || p.gz {
			byNumber[n] = piece{name: path.Join(dir, e.Name()), gz: gz}
		}
	}
	var out []piece
	for _, n := range slices.Sorted(maps.Keys(byNumber)) {
		p := byNumber[n]
		size, err := pieceSize(fsys, p)
		if err != nil {
			return nil, err
		}
		p.size = size
		out = append(out, p)
	}
	info, err := fs.Stat(fsys, name)
	switch {
	case err == nil:
		out = append(out, piece{name: name, size: info.Size()})
	case errors.Is(err, fs.ErrNotExist) && len(out) > 0:
	default:
		return nil, fmt.Errorf("read history: %w", err)
	}
	return out, nil
}

// pieceSize is a piece's size uncompressed: a gzip member ends with it
// (mod 2³², more than a segment ever holds).
func pieceSize(fsys fs.FS, p piece) (int64, error) {
	f, err := fsys.Open(p.name)
	if err != nil {
		return 0, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("read history: %w", err)
	}
	if !p.gz {
		return info.Size(), nil
	}
	ra, ok := f.(io.ReaderAt)
	if !ok || info.Size() < 4 {
		return 0, fmt.Errorf("read history: %s: cannot read its size", p.name)
	}
	var tail [4]byte
	if _, err := ra.ReadAt(tail[:], info.Size()-4); err != nil {
		return 0, fmt.Errorf("read history: %s: %w", p.name, err)
	}
	return int64(binary.LittleEndian.Uint32(tail[:])), nil
}

// Open opens the history at path for reading from offset on, its segments
// and live file as one stream (see SegmentBytes).
func Open(path string, offset int64) (io.ReadCloser, error) {
	return OpenFS(os.DirFS(filepath.Dir(path)), filepath.Base(path), offset)
}

// OpenFS is Open of the history called name in fsys: serve reads run
// directories through an os.Root, which no name in them escapes.
func OpenFS(fsys fs.FS, name string, offset int64) (io.ReadCloser, error) {
	// A segment listed raw may be removed, compressed, before it is
	// opened; the next listing names its compressed copy.
	var err error
	for range 3 {
		var ps []piece
		if ps, err = pieces(fsys, name); err != nil {
			return nil, err
		}
		var r io.ReadCloser
		if r, err = openPieces(fsys, ps, offset); !errors.Is(err, fs.ErrNotExist) {
			return r, err
		}
	}
	return nil, fmt.Errorf("read history: %w", err)
}

// openPieces opens every piece from the one holding offset on: an open
// file is read to its end even if the writer removes it meanwhile.
func openPieces(fsys fs.FS, ps []piece, offset int64) (io.ReadCloser, error) {
	var s stream
	for _, p := range ps {
		if offset >= p.size && p.gz { // a compressed one is skipped unread
			offset -= p.size
			continue
		}
		f, err := fsys.Open(p.name)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.files = append(s.files, f)
		var r io.Reader = f
		if p.gz {
			if r, err = gzip.NewReader(f); err != nil {
				s.Close()
				return nil, fmt.Errorf("read history: %s: %w", p.name, err)
			}
		}
		if offset > 0 {
			skip := min(offset, p.size)
			if sk, ok := r.(io.Seeker); ok {
				_, err = sk.Seek(skip, io.SeekStart)
			} else {
				_, err = io.CopyN(io.Discard, r, skip)
			}
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("read history: %s: %w", p.name, err)
			}
			offset -= skip
		}
		s.readers = append(s.readers, r)
	}
	s.Reader = io.MultiReader(s.readers...)
	return &s, nil
}

// stream is the pieces of a history read as one.
type stream struct {
	io.Reader
	readers []io.Reader
	files   []fs.File
}

func (s *stream) Close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// compress writes the closed segment at raw as raw.gz and removes raw.
// Readers may read either meanwhile (pieces); a coordinator killed before
// the end leaves the raw segment and a .tmp readers skip.
func compress(raw string) error {
	tmp := raw + gzSuffix + tmpSuffix
	err := func() error {
		in, err := os.Open(raw)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(tmp)
		if err != nil {
			return err
		}
		zw, _ := gzip.NewWriterLevel(out, gzip.BestSpeed)
		_, err = io.Copy(zw, in)
		err = errors.Join(err, zw.Close())
		err = errors.Join(err, out.Sync(), out.Close())
		if err != nil {
			return err
		}
		return os.Rename(tmp, raw+gzSuffix)
	}()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compress history segment %s: %w", raw, err)
	}
	if err := os.Remove(raw); err != nil {
		slog.Warn("history: remove the compressed segment's raw copy", "segment", raw, "err", err)
	}
	return nil
}

// Size is the size of the history at path, its segments uncompressed.
func Size(path string) (int64, error) {
	ps, err := pieces(os.DirFS(filepath.Dir(path)), filepath.Base(path))
	var n int64
	for _, p := range ps {
		n += p.size
	}
	return n, err
}
