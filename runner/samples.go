package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/reports"
)

// sampleEvery is the time between a run's first samples; maxSamples bounds
// the samples a run keeps. When there are more, every other one goes and
// the time between them doubles: a minute's run keeps its 60 samples a
// second apart, an hour's soak some 1,800 two seconds apart, a day's some
// 1,300 a minute apart, and a plot of any of them has the points it can
// show.
const (
	sampleEvery = time.Second
	maxSamples  = 2000
)

// settleWait bounds how long the last sample waits for the servers to let
// go of the clients' closed connections: a server reads a client's FIN on
// its next turn of its event loop, so what it still holds after this it
// holds for a client that is gone.
const settleWait = 2 * time.Second

// sampler records the resources the coordinator and each server of the
// run hold (reports.Sample) into the run's samples file, every so often
// from before the first client starts until after the last one stopped:
// what a long run leaks (memory, connections, the sessions behind them)
// shows there.
type sampler struct {
	path    string
	cluster *cluster.Cluster
	log     *slog.Logger
	max     int
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex // guards what follows, for stop
	every   time.Duration
	samples []reports.Sample
	f       *os.File
	err     error // the first write that failed; later ones are not tried
	// pids are the host pids of the instances seen: a container's takes
	// a question to the engine.
	pids map[cluster.Instance]int
	// follow reads the history as it grows into tally, whose totals each
	// sample records (reports.RunFigures): a long run's lost updates and
	// strikes over time, in a file of bounded length.
	follow *history.Follower
	tally  live.Tally
}

// startSampler takes a first sample of c's servers and the coordinator
// into dir's samples file, and goes on sampling every sampleEvery (or
// more, see maxSamples) until stop. ttl is the run's lease: a double
// grant up to a ttl after a strike healed counts as its hit
// (live.Tally.Grace).
func startSampler(dir string, c *cluster.Cluster, ttl time.Duration, log *slog.Logger) (*sampler, error) {
	return startSamplerEvery(dir, c, log, sampleEvery, maxSamples, ttl)
}

// startSamplerEvery is startSampler with the time between the first
// samples and the most samples kept (even) given.
func startSamplerEvery(dir string, c *cluster.Cluster, log *slog.Logger, every time.Duration, most int, ttl time.Duration) (*sampler, error) {
	path := filepath.Join(dir, reports.SamplesFile)
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create the samples file: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{path: path, cluster: c, log: log, max: most, cancel: cancel, done: make(chan struct{}),
		every: every, f: f, pids: map[cluster.Instance]int{}, follow: history.Follow(filepath.Join(dir, reports.HistoryFile))}
	s.tally.Grace = ttl
	s.add(s.take())
	go s.loop(ctx)
	return s, nil
}

func (s *sampler) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTimer(s.interval())
	defer t.Stop()
	// The history is read every tallyEvery however far apart the samples
	// grew: what it gained meanwhile is read whole, and a day's samples a
	// minute apart would read a minute of a busy run's history at once.
	poll := time.NewTicker(tallyEvery)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			s.poll()
		case <-t.C:
			s.add(s.take())
			t.Reset(s.interval())
		}
	}
}

// tallyEvery is how often the sampler reads what the history gained.
const tallyEvery = time.Second

// poll adds what the history gained to the tally. Only the sampler's
// goroutine calls it (through take too), or stop once that goroutine has
// ended: the tally needs no lock.
func (s *sampler) poll() {
	if recs, err := s.follow.Poll(); err == nil { // a read error shows as figures that stand still
		s.tally.Add(recs...)
	}
}

func (s *sampler) interval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.every
}

// stop takes the last sample and closes the file. Unless now (an
// interrupted run, which must end at once), the last sample waits up to
// settleWait, or the run's TTL and a second when longer, for each server
// to hold no more of its clients' connections or sessions than at the
// start: the clients have closed theirs, and a server that
// still holds them then keeps them (reports.ProcResources.LeakedClients). A nil sampler
// (a run that never started its servers) has nothing to stop.
func (s *sampler) stop(now bool) error {
	if s == nil {
		return nil
	}
	s.cancel()
	<-s.done
	last := s.take()
	// A killed client's session lives until its TTL runs out (an etcd
	// lease, a ZooKeeper session): that is no leak.
	for deadline := time.Now().Add(max(settleWait, s.tally.Grace+time.Second)); !now && s.unsettled(last) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		last = s.take()
	}
	s.add(last)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.f.Close(); err != nil && s.err == nil {
		s.err = fmt.Errorf("close %s: %w", s.path, err)
	}
	return s.err
}

// unsettled reports whether some server holds more of its clients'
// connections, or sessions, in last than it did, as the same process, in
// the first sample.
func (s *sampler) unsettled(last reports.Sample) bool {
	s.mu.Lock()
	first := s.samples[0]
	s.mu.Unlock()
	for _, p := range last.Procs {
		for _, q := range first.Procs {
			if p.Name != q.Name || p.Name == reports.CoordinatorName || p.Pid != q.Pid || p.Error != "" || q.Error != "" {
				continue
			}
			if p.Clients > q.Clients || p.Sessions != nil && q.Sessions != nil && *p.Sessions > *q.Sessions {
				return true
			}
		}
	}
	return false
}

// take reads the coordinator and every server of the cluster now. A
// server that cannot be read (no pid for the user's, a node being
// restarted) is in the sample with why.
func (s *sampler) take() reports.Sample {
	smp := reports.Sample{Time: clock.Mono()}
	s.poll()
	smp.Run = &reports.RunFigures{Ops: s.tally.Ops, Lost: s.tally.Lost, Strikes: len(s.tally.Strikes), Effective: s.tally.Effective}
	// counted are the kinds whose one member answered for the cluster.
	counted := map[string]bool{}
	me := reports.ProcSample{Name: reports.CoordinatorName, Pid: os.Getpid(), Heap: goHeap()}
	st, err := cluster.ReadProcStat(me.Pid, 0)
	fill(&me, st, err)
	smp.Procs = append(smp.Procs, me)
	for _, n := range s.cluster.Nodes() {
		p := reports.ProcSample{Name: n.Name, Kind: n.Kind}
		inst := n.Process()
		if inst == nil {
			p.Error = "not running"
			smp.Procs = append(smp.Procs, p)
			continue
		}
		pid, st, err := s.readServer(inst, n.Port)
		if pid == 0 {
			p.Error = err.Error()
			smp.Procs = append(smp.Procs, p)
			continue
		}
		p.Pid = pid
		fill(&p, st, err)
		// The connections first: the question about sessions opens one.
		if what, shared, ok := n.CountsSessions(); ok && err == nil && !counted[n.Kind] {
			p.SessionsWhat = what
			if c, err := n.Sessions(context.Background()); err != nil {
				p.SessionsError = err.Error()
			} else {
				p.Sessions = &c
				counted[n.Kind] = shared
			}
		}
		smp.Procs = append(smp.Procs, p)
	}
	return smp
}

// readServer reads a server's figures from /proc where it runs: this
// host's, or its own host's (a server of --nodes, cluster.StatReader). A
// pid of 0 says it has none to read.
func (s *sampler) readServer(inst cluster.Instance, port int) (int, cluster.ProcStat, error) {
	if r, ok := inst.(cluster.StatReader); ok {
		pid, files, err := r.ProcFiles()
		if err != nil {
			return pid, cluster.ProcStat{}, err
		}
		st, err := files.Stat(port)
		return pid, st, err
	}
	s.mu.Lock()
	pid, ok := s.pids[inst]
	s.mu.Unlock()
	if !ok {
		var err error
		if pid, err = inst.HostPid(); err != nil {
			return 0, cluster.ProcStat{}, err
		}
		s.mu.Lock()
		s.pids[inst] = pid
		s.mu.Unlock()
	}
	st, err := cluster.ReadProcStat(pid, port)
	return pid, st, err
}

// fill puts what ReadProcStat read into p, or why it could not.
func fill(p *reports.ProcSample, st cluster.ProcStat, err error) {
	if err != nil {
		p.Error = err.Error()
		return
	}
	p.RSS, p.FDs, p.TCP, p.Clients = st.RSS, st.FDs, st.TCP, st.Clients
}

// goHeap is the coordinator's Go heap in bytes: objects live or not yet
// collected. runtime/metrics reads it without stopping the world, as
// runtime.ReadMemStats would every second.
func goHeap() int64 {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(m[0].Value.Uint64())
}

// add keeps smp and appends it to the file; past s.max samples it thins
// them and rewrites the file, and samples half as often from then on.
func (s *sampler) add(smp reports.Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, smp)
	if s.err != nil {
		return
	}
	if len(s.samples) > s.max {
		s.samples = thin(s.samples)
		s.every *= 2
		s.err = s.rewrite()
	} else {
		s.err = writeSamples(s.f, smp)
	}
	if s.err != nil {
		s.log.Warn("sampling resources stops being written", "file", s.path, "err", s.err)
	}
}

// rewrite replaces the file with s.samples, through a new file renamed
// over it, so that a run killed meanwhile leaves one or the other whole.
func (s *sampler) rewrite() error {
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".samples-*")
	if err != nil {
		return fmt.Errorf("thin the samples: %w", err)
	}
	if err := errors.Join(writeSamples(tmp, s.samples...), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("thin the samples: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("thin the samples: %w", err)
	}
	s.f.Close() // the replaced file's
	s.f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("reopen %s: %w", s.path, err)
	}
	return nil
}

// writeSamples writes samples to f, one a line, in one write: a run killed
// meanwhile cuts at most the last line (reports.ReadSamples).
func writeSamples(f *os.File, samples ...reports.Sample) error {
	var buf []byte
	for _, smp := range samples {
		line, err := json.Marshal(smp)
		if err != nil {
			return fmt.Errorf("encode a sample: %w", err)
		}
		buf = append(append(buf, line...), '\n')
	}
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return nil
}

// thin keeps every other sample, the first among them: the same span at
// half the density. add thins max+1 samples, an odd count (max is even),
// so the newest sample stays too: the file always ends at the run's end.
func thin(samples []reports.Sample) []reports.Sample {
	out := samples[:0]
	for i := 0; i < len(samples); i += 2 {
		out = append(out, samples[i])
	}
	return out
}
