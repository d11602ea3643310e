package serve

import (
	"path"
	"slices"
	"sync"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/reports"
)

// followed is how far serve has read one run's history, and its tally
// so far: the index reloads every 5 s and a run's page every 2 s, and
// each reads only what the history gained since, not the whole of it
// again (for a soak, tens of millions of records).
type followed struct {
	mu     sync.Mutex
	follow *history.Follower // nil until first used
	tally  live.Tally
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
	if fw.follow == nil {
		fw.follow = history.FollowFS(s.root.FS(), path.Join(p, reports.HistoryFile))
	}
	fw.tally.Grace = grace
	if err := fw.follow.Read(func(r *history.Record) { fw.tally.Add(*r) }); err != nil {
		return live.Tally{}, err
	}
	t := fw.tally
	t.Strikes = slices.Clone(t.Strikes) // the follow goes on healing its own
	return t, nil
}
