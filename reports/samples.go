package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// SamplesFile holds the resources the run's processes held over time, one
// Sample a line: what a long run leaks shows there, not in the history.
const SamplesFile = "samples.jsonl"

// CoordinatorName names the coordinator's own process in the samples.
const CoordinatorName = "coordinator"

// Sample is what each process of a run held at one moment.
type Sample struct {
	// Time is on the history's clock (clock.Mono), so that a plot lines
	// the samples up with the faults.
	Time  int64        `json:"time"`
	Procs []ProcSample `json:"procs"`
	// Run is what the history said so far at that moment: a long run's
	// lost updates and strikes over time, read from one bounded file
	// (locktest serve plots them) rather than from a history of millions
	// of records. Absent in samples taken before it was recorded.
	Run *RunFigures `json:"run,omitempty"`
}

// RunFigures are a run's running totals at one moment (live.Tally's).
type RunFigures struct {
	// Ops counts client operations completed so far.
	Ops int `json:"ops"`
	// Lost counts the lost updates already certain (workload counter).
	Lost int `json:"lost"`
	// Strikes counts the fault strikes begun; Effective those under
	// which (or within a lease after whose heal) two clients believed
	// they held one key: the live estimate of checker.Efficacy's
	// "effective", which the check after the run decides.
	Strikes   int `json:"strikes"`
	Effective int `json:"effective"`
}

// ProcSample is one process at one moment: the coordinator, or a server
// the run started (or the user's, when locktest knows its pid).
type ProcSample struct {
	// Name is the node's (redis-0, resource) or CoordinatorName.
	Name string `json:"name"`
	// Kind is the node's server (redis, etcd, …); none for the coordinator.
	Kind string `json:"kind,omitempty"`
	Pid  int    `json:"pid,omitempty"`
	// RSS is the resident memory in bytes.
	RSS int64 `json:"rss,omitempty"`
	// Heap is the Go heap's live and not yet collected objects, in bytes:
	// the coordinator's only.
	Heap int64 `json:"heap,omitempty"`
	// FDs counts open files; TCP the established TCP connections, and
	// Clients those of them on the server's own port, the ones its
	// clients dialed (none for the coordinator): a consensus member's
	// connections to its peers come and go with the load, not with the
	// clients.
	FDs     int `json:"fds,omitempty"`
	TCP     int `json:"tcp"`
	Clients int `json:"clients"`
	// Sessions is what the server itself counts of its clients' sessions
	// (cluster.Node.Sessions: Redis's connected clients, etcd's leases,
	// ZooKeeper's sessions, PostgreSQL's client backends, MariaDB's
	// connected threads), nil for a server that cannot say. PostgreSQL's
	// clients are served by backends, not by the postmaster whose port
	// the connections are counted on. A session outlives its connection
	// where the design makes it (an etcd lease kept alive, or granted
	// for long and never revoked), which the port's count cannot see.
	Sessions *int `json:"sessions,omitempty"`
	// SessionsWhat names what Sessions counts ("leases"); SessionsError
	// says why the server could not be asked this time.
	SessionsWhat  string `json:"sessions_what,omitempty"`
	SessionsError string `json:"sessions_error,omitempty"`
	// Error says why the process could not be read (no pid for a server
	// the user runs, a node being restarted); the figures are then zero.
	Error string `json:"error,omitempty"`
}

// ReadSamples reads a run directory's samples; none for a run made before
// they were taken. A line cut off by a killed run ends them.
func ReadSamples(dir string) ([]Sample, error) {
	path := filepath.Join(dir, SamplesFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	defer f.Close()
	return DecodeSamples(f, path)
}

// DecodeSamples reads samples from r, one a line, as ReadSamples does;
// name is what errors call r. A reader that opens files its own way
// (locktest serve, through its store's root) decodes them with it.
func DecodeSamples(r io.Reader, name string) ([]Sample, error) {
	var out []Sample
	var bad error // a line that does not parse: the last one's is forgiven
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if bad != nil {
			return out, bad
		}
		var s Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			bad = fmt.Errorf("%s line %d: %w", name, line, err)
			continue
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// Resources sums up the samples of a run: per process, its memory and
// connections from start to end.
type Resources struct {
	// Samples counts the samples; MaxGap is the longest time between two,
	// in seconds: the interval the sampler widened to (it does so to keep
	// a long run's file bounded), or longer if the coordinator stalled.
	Samples int             `json:"samples"`
	MaxGap  float64         `json:"max_gap_s"`
	Procs   []ProcResources `json:"procs"`
	// Unsampled says which processes could not be read at all, and why.
	Unsampled []string `json:"unsampled,omitempty"`
	// Leaks are the client connections and sessions servers held at the
	// end beyond those at the start (see ProcResources.LeakedClients and
	// SessionResources.Leaked): a finding about the design, not a
	// violation of its safety.
	Leaks []string `json:"leaks,omitempty"`
}

// ProcResources is one process's resources over the run.
type ProcResources struct {
	Name    string `json:"name"`
	Kind    string `json:"kind,omitempty"`
	Samples int    `json:"samples"`
	// FirstRSS and LastRSS are its resident memory in the first and last
	// samples, PeakRSS the most, in bytes. SettledRSS is the memory at a
	// twelfth of the sampled time (5 minutes into an hour), once start-up
	// has allocated what the process needs for the run.
	FirstRSS   int64 `json:"first_rss"`
	SettledRSS int64 `json:"settled_rss"`
	LastRSS    int64 `json:"last_rss"`
	PeakRSS    int64 `json:"peak_rss"`
	// Growth is LastRSS over SettledRSS, less one: 0.2 is a fifth more
	// memory at the end than once settled. Memory that grows with the
	// run's length is a leak; a fixed start-up cost is not, hence not
	// from FirstRSS.
	Growth float64 `json:"growth"`
	// ClientsStart and ClientsEnd are the connections on the server's
	// port (ProcSample.Clients) in the first and last samples,
	// ClientsPeak the most; TCPPeak is the most of all its connections.
	ClientsStart int `json:"clients_start"`
	ClientsEnd   int `json:"clients_end"`
	ClientsPeak  int `json:"clients_peak"`
	TCPPeak      int `json:"tcp_peak"`
	// LeakedClients is a server's ClientsEnd less ClientsStart when
	// positive, the server was read in the run's first and last samples,
	// and the process is the one that started (a restarted server's counts
	// are another process's). The first sample is taken
	// before any client connects, the last after every client has closed
	// and the servers had time to see it, so what is left is held for
	// clients that are gone. The coordinator has no port of its own.
	LeakedClients int `json:"leaked_clients,omitempty"`
	// Sessions are the server's own count of its sessions over the run
	// (ProcSample.Sessions); nil when it was never read.
	Sessions *SessionResources `json:"sessions,omitempty"`
}

// SessionResources is a server's session count over the run: in the
// first and last samples where it answered, and the most.
type SessionResources struct {
	What  string `json:"what"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Peak  int    `json:"peak"`
	// Leaked is End less Start when positive and the count was read in
	// the run's first and last samples, from the same process: sessions
	// left after every client closed (an etcd lease granted and never
	// revoked, or kept alive by a process that outlived its client).
	Leaked int `json:"leaked,omitempty"`
}

// Summarize sums samples up; nil without samples.
func Summarize(samples []Sample) *Resources {
	if len(samples) == 0 {
		return nil
	}
	r := &Resources{Samples: len(samples)}
	for i := 1; i < len(samples); i++ {
		r.MaxGap = max(r.MaxGap, float64(samples[i].Time-samples[i-1].Time)/1e9)
	}
	settleAt := samples[0].Time + (samples[len(samples)-1].Time-samples[0].Time)/12
	type seen struct {
		p       ProcResources
		settled bool
		errs    []string
		// The server's client connections, and its own count of
		// sessions (what it counts: sessWhat).
		clients, sessions count
		sessWhat          string
	}
	byName := map[string]*seen{}
	var order []string
	for _, s := range samples {
		first := s.Time == samples[0].Time
		for _, ps := range s.Procs {
			x := byName[ps.Name]
			if x == nil {
				x = &seen{p: ProcResources{Name: ps.Name, Kind: ps.Kind}}
				byName[ps.Name] = x
				order = append(order, ps.Name)
			}
			if ps.Error != "" {
				x.clients.miss()
				x.sessions.miss()
				if len(x.errs) == 0 || x.errs[len(x.errs)-1] != ps.Error {
					x.errs = append(x.errs, ps.Error)
				}
				continue
			}
			p := &x.p
			if p.Samples == 0 {
				p.FirstRSS = ps.RSS
			}
			if !x.settled {
				p.SettledRSS = ps.RSS
				x.settled = s.Time >= settleAt
			}
			p.Samples++
			p.LastRSS, p.PeakRSS, p.TCPPeak = ps.RSS, max(p.PeakRSS, ps.RSS), max(p.TCPPeak, ps.TCP)
			x.clients.add(ps.Clients, ps.Pid, first)
			if ps.Sessions == nil {
				x.sessions.miss()
				continue
			}
			if !x.sessions.read {
				x.sessWhat = ps.SessionsWhat
			}
			x.sessions.add(*ps.Sessions, ps.Pid, first)
		}
	}
	for _, name := range order {
		x := byName[name]
		if x.p.Samples == 0 {
			why := strings.Join(x.errs, "; ")
			if !strings.HasPrefix(why, name) { // cluster's errors name the node
				why = name + ": " + why
			}
			r.Unsampled = append(r.Unsampled, why)
			continue
		}
		p := x.p
		if p.SettledRSS > 0 {
			p.Growth = math.Round((float64(p.LastRSS)/float64(p.SettledRSS)-1)*1000) / 1000
		}
		c := x.clients
		p.ClientsStart, p.ClientsEnd, p.ClientsPeak, p.LeakedClients = c.start, c.end, c.peak, c.leaked()
		if p.LeakedClients > 0 {
			r.Leaks = append(r.Leaks, fmt.Sprintf("%s held %d more client connection(s) at the end, after the clients closed, than at the start (%d → %d)",
				name, p.LeakedClients, p.ClientsStart, p.ClientsEnd))
		}
		if c := x.sessions; c.read {
			p.Sessions = &SessionResources{What: x.sessWhat, Start: c.start, End: c.end, Peak: c.peak, Leaked: c.leaked()}
		}
		if ss := p.Sessions; ss != nil && ss.Leaked > 0 {
			// Beside a leak of connections, not folded into it: a
			// session may live without one (an etcd lease), and where
			// the count is of connections (Redis's) it is the server's
			// own word for what the port showed.
			r.Leaks = append(r.Leaks, fmt.Sprintf("%s held %d more session(s) (%s) at the end, after the clients closed, than at the start (%d → %d)",
				name, ss.Leaked, ss.What, ss.Start, ss.End))
		}
		r.Procs = append(r.Procs, p)
	}
	return r
}

// count follows one figure of a process over the samples (its client
// connections, its sessions) from its first reading to its latest. What
// it holds at the end beyond the start is left by clients that are gone
// only when it was read in the run's first sample and in its last, as one
// process: a restarted server's figures are another process's.
type count struct {
	start, end, peak  int
	firstPid, lastPid int
	// read: read at least once; fromStart: first read in the run's first
	// sample; atEnd: read in the latest sample so far.
	read, fromStart, atEnd bool
}

// add takes a reading of n from the process pid; first says the sample is
// the run's first.
func (c *count) add(n, pid int, first bool) {
	if !c.read {
		c.start, c.firstPid, c.fromStart, c.read = n, pid, first, true
	}
	c.end, c.lastPid, c.peak, c.atEnd = n, pid, max(c.peak, n), true
}

// miss takes a sample in which the figure could not be read.
func (c *count) miss() { c.atEnd = false }

// leaked is what the process held at the end beyond the start (see count).
func (c *count) leaked() int {
	if c.fromStart && c.atEnd && c.firstPid == c.lastPid && c.end > c.start {
		return c.end - c.start
	}
	return 0
}

// Line says each process's memory, and each server's client connections,
// and sessions where it counts them, from start to end on one line, for
// the summary: "coordinator 38→41 MB; redis-0 3.1→3.4 MB, clients 0→0
// (peak 6), sessions 0→0 (peak 5)".
func (r *Resources) Line() string {
	var parts []string
	for _, p := range r.Procs {
		s := fmt.Sprintf("%s %s→%s MB", p.Name, megabytes(p.FirstRSS), megabytes(p.LastRSS))
		if p.Name != CoordinatorName {
			s += fmt.Sprintf(", clients %d→%d (peak %d)", p.ClientsStart, p.ClientsEnd, p.ClientsPeak)
		}
		if ss := p.Sessions; ss != nil {
			s += fmt.Sprintf(", %s %d→%d (peak %d)", ss.What, ss.Start, ss.End, ss.Peak)
		}
		parts = append(parts, s)
	}
	return strings.Join(limit(parts, 4), "; ")
}

// megabytes says n bytes in MB to two significant figures or more: 3.1, 41.
func megabytes(n int64) string {
	mb := float64(n) / (1 << 20)
	if mb >= 10 {
		return fmt.Sprintf("%.0f", mb)
	}
	return fmt.Sprintf("%.1f", mb)
}
