// Package serve shows a store of runs as a web site, as Jepsen's serve
// does: an index of the runs with their verdicts, each run's files, the
// designs × faults comparison of the whole store, and a page that follows a
// run still in progress until its verdict is in. It only reads the store:
// every path goes through an os.Root, so no request reaches outside it,
// whether by ".." or by a symbolic link.
package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
)

// Prefix is where the generated pages live; store paths never begin with
// it, since a scenario name begins with a letter or digit.
const Prefix = "/_/"

// Server serves one store.
type Server struct {
	store string // absolute, symbolic links resolved
	root  *os.Root
	mux   *http.ServeMux
	// hosts are the Host headers answered; nil: any (see Bind).
	hosts []string
	// follows are the histories of runs not checked, read as they grow.
	follows follows
}

// New opens the store for serving. A path that is not a directory is
// refused.
func New(store string) (*Server, error) {
	abs, err := filepath.Abs(store)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", store, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", store, err)
	}
	s := &Server{store: abs, root: root, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET "+Prefix+"run/{run...}", s.run)
	s.mux.HandleFunc("GET "+Prefix+"{file}", s.compare)
	s.mux.Handle("GET /", storeFiles(http.FileServerFS(forbidding{root.FS()})))
	return s, nil
}

// Headers of every response. nosniff: a browser takes the type we send and
// never guesses HTML from a file's content. pageCSP is for the pages we
// generate, which hold no script; fileCSP for the store's files, whose
// porcupine pages need their inline script: they are sandboxed in an origin
// of their own, so that a script written into a run's file from a history
// cannot read the store or act as this site.
const (
	pageCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; " +
		"form-action 'none'; frame-ancestors 'none'"
	fileCSP = "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
		"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// fileTypes are the types of what a store holds, by extension. Any other
// file (logs, histories, servers' data) is plain text: the system's MIME
// files are not asked, for where they lack an extension the file server
// guesses from the content, and a log that begins with markup would be
// served as HTML.
var fileTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".png":  "image/png",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".gz":   "application/gzip",
}

// contentType is the type a store file named name is served as.
func contentType(name string) string {
	if t, ok := fileTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "text/plain; charset=utf-8"
}

// storeFiles serves the store's files with their type set and sandboxed.
// A path ending in a slash is a directory: the file server lists it as
// HTML (names escaped), or serves its index.html.
func storeFiles(files http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", fileCSP)
		if !strings.HasSuffix(r.URL.Path, "/") {
			w.Header().Set("Content-Type", contentType(r.URL.Path))
		}
		files.ServeHTTP(w, r)
	})
}

// Bind tells the server the address it listens on. On a loopback address
// it answers only requests that name that address, or localhost on its
// port, in their Host header: a web page elsewhere could otherwise point a
// name of its own at 127.0.0.1 (DNS rebinding) and read the store through
// the reader's browser. On any other address every Host is answered: who
// binds it means to be reached by other names.
func (s *Server) Bind(addr net.Addr) {
	s.hosts = nil
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return
	}
	port := strconv.Itoa(tcp.Port)
	for _, h := range []string{tcp.IP.String(), "localhost"} {
		s.hosts = append(s.hosts, net.JoinHostPort(h, port))
		if tcp.Port == 80 {
			s.hosts = append(s.hosts, h) // browsers leave the default port out
		}
	}
}

// forbidding answers a path it cannot open for another reason than its
// absence (a link out of the store, which the os.Root refuses; a file not
// readable) as forbidden: the file server would call it an internal error.
type forbidding struct{ fs.FS }

func (f forbidding) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return file, err
}

// Close releases the store.
func (s *Server) Close() error { return s.root.Close() }

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", pageCSP)
	if s.hosts != nil && !slices.ContainsFunc(s.hosts, func(host string) bool { return strings.EqualFold(host, r.Host) }) {
		http.Error(w, fmt.Sprintf("locktest serve answers only to http://%s/, not to host %q: open that address",
			s.hosts[0], r.Host), http.StatusMisdirectedRequest)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// State says where a run is.
type State string

const (
	// Done: the run was checked; its results are in.
	Done State = "done"
	// InProgress: the coordinator is alive and holds the run directory.
	InProgress State = "in progress"
	// Stopped: no results and no coordinator: a run killed before its
	// check (locktest analyze checks what it wrote).
	Stopped State = "stopped"
)

// Run is one run directory of the store as a page shows it.
type Run struct {
	// Path is the run directory relative to the store, with slashes.
	Path string
	// Dir is the run directory on this machine, for commands to give.
	Dir      string
	Started  time.Time // from the directory's name; zero if it is not a time
	Config   scenario.Config
	State    State
	Results  reports.Results // when Done
	Tally    live.Tally      // when not Done
	Phase    live.Phase      // when InProgress
	Progress string          // the one-line status, when not Done
	Elapsed  float64         // seconds since the clients began, when not Done
	// Memory is the processes' memory in the run's newest resource
	// sample, when not Done; "" before the first.
	Memory string
	// Figures are the run's figures over time, on its own page (nil
	// elsewhere, and for a run without samples).
	Figures *Figures
}

// Hit says, of a checked run, how many of its strikes the check judged
// effective (checker.Efficacy): "3 of 4"; "" without strikes.
func (r Run) Hit() string {
	e := r.Results.Checks.Efficacy
	if len(e) == 0 {
		return ""
	}
	n := 0
	for _, f := range e {
		if f.Effective {
			n++
		}
	}
	return fmt.Sprintf("%d of %d", n, len(e))
}

// IsDone: the run was checked.
func (r Run) IsDone() bool { return r.State == Done }

// IsRunning: the run's coordinator is alive.
func (r Run) IsRunning() bool { return r.State == InProgress }

// Lost says how many updates the run lost: the checked count when the
// resource check decides (workload counter), the certain ones so far for a
// run not checked; "—" when the workload protects no data.
func (r Run) Lost() string {
	switch {
	case r.State == Done && r.Results.DecidedBy == checker.ResourceCheck:
		return strconv.Itoa(r.Results.Checks.Stats.Lost)
	case r.State != Done && r.Tally.Sections > 0:
		return fmt.Sprintf("%d so far", r.Tally.Lost)
	}
	return "—"
}

// Class is the page's style class of the run's outcome or state.
func (r Run) Class() string { return strings.ReplaceAll(r.Outcome(), " ", "-") }

// Outcome is the run's verdict in the reports' words, or its state.
func (r Run) Outcome() string {
	if r.State != Done {
		return string(r.State)
	}
	return string(reports.OutcomeOf(r.Results.Verdict))
}

// runs finds every run directory of the store (one holding config.json),
// newest first, and the explorations, sweeps and suite outputs that hold
// some. Server data and logs inside a run are not walked.
func (s *Server) runs() ([]Run, []*Group, error) {
	var out []Run
	var groups []*Group
	err := fs.WalkDir(s.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // a directory that vanished or cannot be read: not a run we can show
		}
		if !d.IsDir() {
			return nil
		}
		if g, ok := s.container(p); ok {
			groups = append(groups, g)
		}
		if _, err := fs.Stat(s.root.FS(), path.Join(p, scenario.ConfigFile)); err != nil {
			return nil
		}
		if r, err := s.load(p, false); err == nil {
			out = append(out, r)
		} else {
			slog.Warn("serve: skipping a run", "dir", p, "err", err)
		}
		return fs.SkipDir
	})
	slices.SortStableFunc(out, func(a, b Run) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, groups, err
}

// load reads one run directory: its results when checked, else what its
// history says so far. The history of a stopped run is read only when
// detail is asked for (its own page): it may be long, and it no longer
// changes.
func (s *Server) load(p string, detail bool) (Run, error) {
	r := Run{Path: p, Dir: filepath.Join(s.store, filepath.FromSlash(p))}
	if t, err := time.ParseInLocation("20060102T150405.000", strings.SplitN(path.Base(p), "-", 2)[0], time.Local); err == nil {
		r.Started = t
	}
	data, err := s.root.ReadFile(path.Join(p, scenario.ConfigFile))
	if err != nil {
		return r, err
	}
	r.Config = scenario.Defaults()
	if err := json.Unmarshal(data, &r.Config); err != nil {
		return r, fmt.Errorf("%s: %w", scenario.ConfigFile, err)
	}
	dir, err := s.root.Open(p)
	if err != nil {
		return r, err
	}
	running := scenario.InProgress(dir)
	dir.Close()
	if !running {
		if data, err := s.root.ReadFile(path.Join(p, reports.ResultsFile)); err == nil {
			s.follows.forget(p)
			r.State = Done
			if err := json.Unmarshal(data, &r.Results); err != nil {
				return r, fmt.Errorf("%s: %w", reports.ResultsFile, err)
			}
			if detail {
				_, err = s.samples(&r, true)
			}
			return r, err
		}
	}
	r.State = Stopped
	if running {
		r.State = InProgress
	}
	if !running && !detail {
		r.Progress = "no results: the run ended before its check (killed?)"
		return r, nil
	}
	// As the run's samples count hits, with its TTL as grace.
	if r.Tally, err = s.tally(p, time.Duration(r.Config.TTL)); err != nil {
		return r, err
	}
	if smp, err := s.samples(&r, detail); err != nil {
		return r, err
	} else if smp != nil {
		r.Memory = live.MemoryText(*smp)
	}
	if running {
		now := clock.Mono()
		r.Phase = r.Tally.Phase(now)
		r.Progress = r.Tally.Line(r.Phase, now)
		r.Elapsed = r.Tally.Elapsed(now).Seconds()
	} else {
		// Up to its last record: a stopped run's time must not grow with
		// the clock of whoever reads it.
		r.Progress = r.Tally.Line(live.Phase(Stopped), r.Tally.Last)
		r.Elapsed = r.Tally.Elapsed(r.Tally.Last).Seconds()
	}
	return r, nil
}

// samples reads the run's samples file: all of it into r.Figures when
// whole (its own page), else its newest sample only, from the file's
// end. It returns the newest sample, nil when there is none yet.
func (s *Server) samples(r *Run, whole bool) (*reports.Sample, error) {
	name := path.Join(r.Path, reports.SamplesFile)
	f, err := s.root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !whole {
		if smp, ok := live.LatestSample(f); ok {
			return &smp, nil
		}
		return nil, nil
	}
	// A line being written, or cut off by a kill, ends them early: what
	// comes before it counts.
	all, _ := reports.DecodeSamples(f, name)
	if len(all) == 0 {
		return nil, nil
	}
	r.Figures = figures(all)
	return &all[len(all)-1], nil
}

func (s *Server) index(w http.ResponseWriter, req *http.Request) {
	runs, containers, err := s.runs()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	following := slices.ContainsFunc(runs, Run.IsRunning)
	render(w, indexTmpl, struct {
		Store   string
		Runs    []Run
		Groups  []*Group
		Refresh bool
	}{s.store, runs, group(runs, containers), following})
}

func (s *Server) run(w http.ResponseWriter, req *http.Request) {
	p := path.Clean(req.PathValue("run"))
	if !fs.ValidPath(p) || p == "." {
		http.NotFound(w, req)
		return
	}
	if _, err := s.root.Stat(path.Join(p, scenario.ConfigFile)); err != nil {
		http.Error(w, "no run directory "+p, http.StatusNotFound)
		return
	}
	r, err := s.load(p, true)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var summary []byte
	if r.State == Done {
		summary, _ = s.root.ReadFile(path.Join(p, reports.SummaryFile))
	}
	render(w, runTmpl, struct {
		Run
		Summary  string
		Headline string
		Strikes  []strike
	}{r, string(summary), reports.Headline(r.Results), strikes(r.Tally, r.IsRunning())})
}

// strike is a fault of a run not checked, relative to the run's start.
type strike struct {
	Name, Target string
	At           string
	Lasted       string // "active" while it lasts
}

// strikes lists the faults of a run in progress, or of one that stopped
// (whose last fault may never have been healed).
func strikes(t live.Tally, running bool) []strike {
	open := "never healed"
	if running {
		open = "active"
	}
	var out []strike
	for _, f := range t.Strikes {
		st := strike{Name: f.Name, Target: f.Target, At: fmt.Sprintf("%.3f s", float64(f.Start-t.Started)/1e9), Lasted: open}
		if f.Healed {
			st.Lasted = fmt.Sprintf("%.0f ms", float64(f.Stop-f.Start)/1e6)
		}
		out = append(out, st)
	}
	return out
}

// compare renders the comparison of every checked run and envelope in the store, as
// locktest compare would write it into the store's "_" directory (the
// links to the reports are relative to it): nothing is written.
func (s *Server) compare(w http.ResponseWriter, req *http.Request) {
	name := req.PathValue("file")
	if !slices.Contains([]string{reports.CompareHTML, reports.ComparePNG, reports.CompareJSON, reports.CompareMarkdown, reports.EnvelopesPNG}, name) {
		http.NotFound(w, req)
		return
	}
	m, err := reports.Compare([]string{s.store}, scenario.ComparedSettings(), false)
	if errors.Is(err, reports.ErrNoRuns) {
		http.Error(w, "no checked run in the store yet", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	files, err := reports.ComparisonFiles(filepath.Join(s.store, strings.Trim(Prefix, "/")), m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType(name))
	http.ServeContent(w, req, name, time.Now(), bytes.NewReader(files[name]))
}
