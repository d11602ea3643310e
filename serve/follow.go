package serve

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/reports"
)

// followChunk is how much of a history a follow reads at a time: an
// 8-hour soak's history is gigabytes, and a page must not hold it whole.
const followChunk = 4 << 20

// followed is how far serve has read one run's history, and its tally
// so far: the index reloads every 5 s and a run's page every 2 s, and
// each reads only what the history gained since, not the whole of it
// again (for a soak, tens of millions of records).
type followed struct {
	mu    sync.Mutex
	off   int64  // bytes of the history tallied
	rest  []byte // a line read in part, to finish on the next read
	tally live.Tally
}

// follows are the runs serve follows, by store path.
type follows struct {
	mu   sync.Mutex
	runs map[string]*followed
}

// forget drops what serve followed of the run at p (checked, or gone).
func (fs *follows) forget(p string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.runs, p)
}

// of is the follow of the run at p, made on first use.
func (fs *follows) of(p string) *followed {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.runs == nil {
		fs.runs = map[string]*followed{}
	}
	f := fs.runs[p]
	if f == nil {
		f = &followed{}
		fs.runs[p] = f
	}
	return f
}

// tally reads what the history of the run at p gained since the last
// time, through the store's root, and returns the tally so far (a copy
// the caller may read while the follow goes on). grace is the run's TTL
// (live.Tally.Grace). A run without a history yet has an empty tally.
func (s *Server) tally(p string, grace time.Duration) (live.Tally, error) {
	fw := s.follows.of(p)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	// From where the last request ended, across the segments a long
	// run's history closed meanwhile (history.OpenFS).
	f, err := history.OpenFS(s.root.FS(), path.Join(p, reports.HistoryFile), fw.off)
	if errors.Is(err, fs.ErrNotExist) {
		return live.Tally{Grace: grace}, nil
	}
	if err != nil {
		return live.Tally{}, err
	}
	defer f.Close()
	fw.tally.Grace = grace
	buf := make([]byte, followChunk)
	for {
		n, err := io.ReadFull(f, buf)
		fw.off += int64(n)
		data := append(fw.rest, buf[:n]...)
		cut := bytes.LastIndexByte(data, '\n') + 1
		// A line that does not parse (being written, or cut off by a
		// kill) ends what the scanner gives: what comes before counts.
		sc := history.NewScanner(bytes.NewReader(data[:cut]))
		for sc.Scan() {
			fw.tally.Add(sc.Record())
		}
		fw.rest = append([]byte(nil), data[cut:]...)
		if err != nil { // io.EOF or io.ErrUnexpectedEOF: all there is so far
			break
		}
	}
	t := fw.tally
	t.Strikes = slices.Clone(t.Strikes) // the follow goes on healing its own
	return t, nil
}
