package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locktest/locktest/checker"
	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/cluster/container"
	"github.com/locktest/locktest/cluster/remote"
	"github.com/locktest/locktest/faults"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/reports"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/seed"
	"github.com/locktest/locktest/workloads"
)

// ErrInterrupted is returned when the run was cancelled (Ctrl-C). Every
// process was stopped and the history written so far can be analyzed.
var ErrInterrupted = errors.New("run interrupted")

// worker is the coordinator's handle on one client process. A crashed
// client gets a new worker (new process, same id).
type worker struct {
	id    int
	wc    WorkerConfig
	proc  *cluster.Process
	stdin *os.File       // nil once stopped or crashed
	read  sync.WaitGroup // the stdout reader
	// seqBase shifts this process's op numbers past those of the client's
	// earlier processes, so invokes and completions pair up across
	// restarts; maxSeq is the highest (shifted) number seen.
	seqBase int
	maxSeq  int
	crashed bool
	clock   clockState
	// failed: the worker reported its lock client broken (and said why).
	failed bool
	// ready is closed once the worker's lock client is set up, or it
	// broke, or the process ended: it will not be starting any more.
	ready     chan struct{}
	readyOnce sync.Once
}

// started marks w as past its start-up (awaitReady).
func (w *worker) started() { w.readyOnce.Do(func() { close(w.ready) }) }

// clockState is the skew a worker's lock clock was last given.
type clockState struct {
	offset time.Duration
	rate   float64
}

var trueClock = clockState{0, 1}

// run holds the state of one run while it is in progress.
type run struct {
	cfg     Resolved
	dir     string
	exe     string
	keys    []string
	hist    *history.Writer
	cluster *cluster.Cluster
	moments momentFeed
	pauses  pauseFeed
	log     *slog.Logger
	obs     Observer
	// samples records the servers' and the coordinator's resources, from
	// once the servers are up until the workers stopped; nil until then.
	samples *sampler

	mu      sync.Mutex // guards workers and their fields
	workers []*worker
	logs    workerLogs
}

// Observer follows a run as it goes: locktest run's progress display.
type Observer struct {
	// Phase, when set, is called as the run enters each phase, with the
	// run's directory (whose history the observer may follow).
	Phase func(p live.Phase, dir string)
	// Stderr receives the lines the run writes for the user while it goes
	// (a lock client that broke); os.Stderr when nil. A display that
	// redraws a status line passes itself, so as to clear it first.
	Stderr io.Writer
}

func (o Observer) phase(p live.Phase, dir string) {
	if o.Phase != nil {
		o.Phase(p, dir)
	}
}

// Run runs one resolved scenario and returns its checked results. ctx
// cancellation (Ctrl-C) stops every process and returns ErrInterrupted.
func Run(ctx context.Context, cfg Resolved) (reports.Results, error) {
	return RunObserved(ctx, cfg, Observer{})
}

// RunObserved is Run, telling obs how the run goes.
func RunObserved(ctx context.Context, cfg Resolved, obs Observer) (reports.Results, error) {
	if obs.Stderr == nil {
		obs.Stderr = os.Stderr
	}
	if err := CheckBinaries(cfg); err != nil {
		return reports.Results{}, err
	}
	release, err := holdServers(ctx, cfg.Servers)
	if err != nil {
		return reports.Results{}, ErrInterrupted
	}
	defer release()
	hosts, err := dialNodes(ctx, cfg)
	if err != nil {
		return reports.Results{}, err
	}
	closeHosts := func() {
		for _, h := range hosts {
			h.Close()
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return reports.Results{}, fmt.Errorf("find own executable: %w", err)
	}
	conf, err := configJSON(cfg)
	if err != nil {
		return reports.Results{}, err
	}
	dir, madeStore, err := newRunDir(cfg.Store, cfg.Scenario)
	if err != nil {
		return reports.Results{}, bad("--store %s: %v; give a directory locktest can write to", cfg.Store, err)
	}
	held, err := holdRunDir(dir)
	if err != nil {
		return reports.Results{Dir: dir}, err
	}
	defer held.Close()
	obs.phase(live.Starting, dir)
	if err := writeConfig(dir, conf); err != nil {
		return reports.Results{Dir: dir}, err
	}
	hist, err := history.Create(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		return reports.Results{Dir: dir}, err
	}
	var c *cluster.Cluster
	var onHosts *remote.Backend
	switch {
	case cfg.Network == NetworkNetns:
		c, err = cluster.NewInLab(filepath.Join(dir, reports.NodeLogsDir))
	case hosts != nil:
		nodesDir := filepath.Join(dir, reports.NodeLogsDir)
		if onHosts, err = remote.New(ctx, hosts, nodesDir, dir, SSHOptions(cfg.Config)); err == nil {
			var fw cluster.Firewalls // nil: the proxy
			if cfg.Network == NetworkFirewall {
				fw = onHosts
			}
			c = cluster.NewWith(nodesDir, onHosts, fw)
			err = writeOffsets(dir, onHosts.Offsets())
		}
	default:
		c, err = cluster.NewOn(filepath.Join(dir, reports.NodeLogsDir), cfg.Backend)
	}
	if err != nil {
		if c != nil {
			_ = c.Stop()
		} else {
			closeHosts()
		}
		hist.Close()
		return reports.Results{Dir: dir}, err
	}
	r := &run{cfg: cfg, dir: dir, exe: exe, hist: hist, cluster: c, log: slog.With("scenario", cfg.Scenario), obs: obs}
	interrupted, runErr := r.execute(ctx)
	// An interrupt during start-up or a final read shows as that step's
	// error: it is the interrupt all the same.
	interrupted = interrupted || ctx.Err() != nil
	// Teardown runs on every path: workers first (they hold no server
	// state), then servers; at once when interrupted, so that Ctrl-C
	// returns within a second or two.
	r.stopWorkers(context.Background(), interrupted)
	r.logs.close()
	if err := r.samples.stop(interrupted); err != nil {
		r.log.Warn("sampling resources", "err", err)
	}
	if interrupted {
		r.cluster.Kill()
	}
	if onHosts != nil {
		mctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		onHosts.Measure(mctx, "end")
		cancel()
		if err := writeOffsets(dir, onHosts.Offsets()); err != nil {
			r.log.Warn("recording the hosts' clocks", "err", err)
		}
	}
	if err := r.cluster.Stop(); err != nil {
		r.log.Warn("stopping servers", "err", err)
	}
	release() // the check needs no server: the next run may have them
	if err := hist.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if interrupted {
		return reports.Results{Dir: dir}, ErrInterrupted
	}
	var badCfg *BadConfigError
	if errors.As(runErr, &badCfg) {
		// Found wrong once the servers ran (a link that does not exist):
		// nothing of the run is worth keeping.
		discardRunDir(cfg.Store, cfg.Scenario, dir, madeStore)
		return reports.Results{}, runErr
	}
	if runErr != nil {
		return reports.Results{Dir: dir}, runErr
	}
	obs.phase(live.Checking, dir)
	res, err := analyzeContext(ctx, dir, cfg, true, func() { obs.phase(live.Reporting, dir) })
	if err == nil && res.Verdict == checker.Valid && !cfg.KeepData {
		if err := r.cluster.RemoveData(); err != nil {
			r.log.Warn("removing the servers' data", "err", err)
		}
	}
	return res, err
}

// CheckBinaries refuses a scenario whose server binaries are not
// installed, saying which package provides them; a suite checks all its
// scenarios before it starts any.
func CheckBinaries(cfg Resolved) error {
	bins := binaries(cfg)
	if cfg.Design.Check != nil {
		if err := cfg.Design.Check(); err != nil {
			return &BadConfigError{err}
		}
	}
	for b, p := range bins {
		if _, err := cluster.LookBinary(b, p); err != nil {
			if p == "" { // no package provides the user's own program
				err = fmt.Errorf("--exec-cmd: %w", err)
			}
			return &BadConfigError{err}
		}
	}
	if cfg.Backend == container.DockerBackend {
		return checkImages(cfg, bins)
	}
	return nil
}

// binaries are the programs a scenario runs, each with the Debian package
// that provides it ("" for the user's own program).
func binaries(cfg Resolved) map[string]string {
	bins := map[string]string{}
	for b, p := range cfg.Design.Binaries {
		bins[b] = p
	}
	if cfg.Workload.NeedsResource && !cfg.Design.GuardsWrites {
		bins["redis-server"] = "redis-server"
	}
	if faults.NeedServerClocks(cfg.Faults) {
		bins["cc"] = "gcc"
	}
	return bins
}

// checkImages refuses a docker run whose images are not built, or whose
// engine does not answer: one line, before anything starts.
func checkImages(cfg Resolved, bins map[string]string) error {
	var servers []string
	for b := range bins {
		if b != "cc" && bins[b] != "" { // the compiler and the user's program run on the host
			servers = append(servers, b)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := container.CheckImages(ctx, servers); err != nil {
		return &BadConfigError{err}
	}
	return nil
}

// execute starts everything, lets the workload and faults run for the
// configured duration, heals, and stops the workers gracefully. It reports
// whether ctx was cancelled.
func (r *run) execute(ctx context.Context) (bool, error) {
	cfg := r.cfg
	lockCfg := lockConfig(cfg.Config)
	// A lock program runs where the user ran locktest, so paths in its
	// command line mean what they meant there.
	wd, err := os.Getwd()
	if err != nil {
		return false, fmt.Errorf("working directory: %w", err)
	}
	lockCfg.ExecDir = wd
	if faults.NeedServerClocks(cfg.Faults) {
		shim, err := cluster.BuildClockShim(cluster.ShimCacheDir())
		if err != nil {
			return false, err
		}
		r.cluster.UseClockShim(shim)
	}
	r.cluster.SetTimeouts(timeouts(cfg.Config))
	r.cluster.SetEviction(cfg.Eviction)
	dep, err := cfg.Design.Deploy(ctx, r.cluster, lockCfg)
	if err != nil {
		return ctx.Err() != nil, fmt.Errorf("start %s servers: %w", cfg.Design.Name, err)
	}
	servers := r.cluster.Nodes() // the design's, before the resource joins
	var resource *cluster.Node
	if cfg.Workload.NeedsResource && !cfg.Design.GuardsWrites {
		resource, err = r.cluster.StartRedis(ctx, cluster.RoleResource, cluster.RedisOptions{Role: cluster.RoleResource})
		if err != nil {
			return ctx.Err() != nil, fmt.Errorf("start resource: %w", err)
		}
	}
	// The first sample is of the servers before any client dials them.
	if r.samples, err = startSampler(r.dir, r.cluster, time.Duration(cfg.TTL), r.log); err != nil {
		return false, err
	}
	r.keys = make([]string, cfg.Keys)
	for i := range r.keys {
		r.keys[i] = fmt.Sprintf("lock-%d", i)
	}
	// Every client reaches every server and the resource through its own
	// link, so a fault can slow or cut exactly one path; or, when no fault
	// of the run acts on links, directly (see faults.LinkFree).
	// A kernel link is only a name for the faults' rules: the clients
	// dial the servers' own addresses either way.
	linked := faults.NeedClientLinks(cfg.Faults) || r.cluster.KernelLinks()
	dial := func(client int, n *cluster.Node) (string, error) {
		if !linked {
			return n.Addr(), nil
		}
		l, err := r.cluster.Link(cluster.LinkName(fmt.Sprintf("c%d", client), n.Name), n.Addr())
		if err != nil {
			return "", err
		}
		return l.Addr(), nil
	}
	batch := !faults.Injects(cfg.Faults)
	var wcs []WorkerConfig
	for i := range cfg.Clients {
		wc := WorkerConfig{Client: i, Impl: cfg.Impl, Workload: cfg.Workload.Name, Lock: lockCfg, Keys: r.keys,
			HoldMin: cfg.HoldMin, HoldMax: cfg.HoldMax, Batch: batch}
		wc.Lock.Client = i
		wc.Lock.Nodes = nil
		for _, n := range dep.Nodes {
			addr, err := dial(i, n)
			if err != nil {
				return false, err
			}
			wc.Lock.Nodes = append(wc.Lock.Nodes, addr)
		}
		if resource != nil {
			addr, err := dial(i, resource)
			if err != nil {
				return false, err
			}
			wc.Resource, wc.Fencing = addr, cfg.Fencing
		}
		wcs = append(wcs, wc)
	}
	env := r.faultEnv(servers)
	for i, f := range cfg.Faults {
		if err := cfg.Targets[i].CheckEnv(env); err != nil {
			return false, bad("--fault-target of %s: %v", f.Name(), err)
		}
	}
	for _, wc := range wcs {
		w, err := r.startWorker(wc, 0)
		if w != nil {
			r.mu.Lock()
			r.workers = append(r.workers, w)
			r.mu.Unlock()
		}
		if err != nil {
			return ctx.Err() != nil, err
		}
	}
	if err := r.awaitReady(ctx); err != nil {
		return true, nil
	}
	r.log.Info("run started", "dir", r.dir, "clients", cfg.Clients, "duration", time.Duration(cfg.Duration))

	// The nemesis: each fault on its own schedule, a pair's two on one,
	// until the duration ends.
	r.hist.Append(history.Record{Process: history.NemesisProcess, Type: history.RunStart, F: "run",
		Asked: int64(cfg.Duration), Time: clock.Mono()})
	// The display times the run from this mark: on disk before it looks.
	if err := r.hist.Flush(); err != nil {
		return false, err
	}
	r.obs.phase(live.Running, r.dir)
	nctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.Duration))
	defer cancel()
	stopped := r.stopOnViolation(nctx, cancel)
	lag := watchLag(nctx)
	var wg sync.WaitGroup
	faultErrs := make([]error, len(cfg.Faults))
	sides := pairings(cfg.Config.Faults)
	for i, f := range cfg.Faults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := *env
			e.Rand = seed.Stream(cfg.Seed, seed.Faults, i)
			e.Target = cfg.Targets[i]
			e.Duration = time.Duration(faults.Own(cfg.Config, f).FaultDuration)
			e.Pair = sides[i]
			r.recordFaults(&e, servers, f.Traits().Aim)
			faultErrs[i] = f.Run(nctx, &e)
		}()
	}
	<-nctx.Done()
	if ctx.Err() == nil {
		r.obs.phase(live.Healing, r.dir)
	}
	wg.Wait() // every fault heals before returning
	why := <-stopped
	if ctx.Err() != nil {
		return true, nil
	}
	// The final heal: what a fault left behind is undone here, and counts
	// as a harness bug.
	faultErrs = append(faultErrs, r.verifyHealed(env, resource))
	r.hist.Append(history.Record{Process: history.NemesisProcess, Type: history.RunEnd, F: "run", Lag: lag(), Stopped: why, Time: clock.Mono()})
	if err := errors.Join(faultErrs...); err != nil {
		return false, fmt.Errorf("fault: %w", err)
	}
	// Quiet end: the workers finish their cycles against a healed system.
	r.stopWorkers(ctx, false)
	r.obs.phase(live.FinalRead, r.dir)
	if err := r.finalRead(ctx, resource, dep, lockCfg); err != nil {
		return ctx.Err() != nil, err
	}
	return ctx.Err() != nil, nil
}

// pairings gives each fault of the run (items' members in order, as
// Resolved.Faults holds them) its side of the pair it belongs to, nil for
// a fault on its own.
func pairings(items []string) []*faults.Pairing {
	var out []*faults.Pairing
	for _, it := range items {
		if len(faults.Members(it)) == 2 {
			first, second := faults.Pair()
			out = append(out, first, second)
		} else {
			out = append(out, nil)
		}
	}
	return out
}

// readyWait bounds how long the run waits for its clients to start: past
// the exec design's own bound on a program's init (impls.InitBound), after
// which that worker reports its client broken, with room for the worker's
// own start on a loaded machine. A client not ready by then (a Go client
// whose setup hangs) is left to the run, as any slow client is.
const readyWait = impls.InitBound + 10*time.Second

// awaitReady waits until every worker's lock client is set up (an exec
// program answered init), broke, or exited, so that the run's duration and
// its faults begin together once every client can be tested: a fault that
// strikes a client still starting breaks its start-up, and the run says
// nothing of the lock. It fails only when ctx ends.
func (r *run) awaitReady(ctx context.Context) error {
	r.mu.Lock()
	workers := append([]*worker(nil), r.workers...)
	r.mu.Unlock()
	timeout := time.NewTimer(readyWait)
	defer timeout.Stop()
	for _, w := range workers {
		select {
		case <-w.ready:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			r.log.Warn("a client did not start in time; the run begins without waiting for it", "client", w.id, "waited", readyWait)
			return nil
		}
	}
	return nil
}

func (r *run) faultEnv(servers []*cluster.Node) *faults.Env {
	cfg := r.cfg
	return &faults.Env{
		Interval: time.Duration(cfg.FaultInterval), Duration: time.Duration(cfg.FaultDuration),
		TTL: time.Duration(cfg.TTL), Latency: time.Duration(cfg.Latency), Jitter: time.Duration(cfg.Jitter),
		ClockDelta: time.Duration(cfg.ClockDelta), ClockRate: cfg.ClockRate, Loss: cfg.Loss,
		Clients: clientSet{r}, Nodes: servers, Links: r.cluster.Links(), Keys: r.keys,
		Moment: cfg.FaultMoment,
		Await: func(ctx context.Context, moment string) (int, error) {
			for {
				c, err := r.moments.next(ctx, moment)
				if err != nil {
					return c, err
				}
				if w := r.worker(c); !w.crashed && !w.proc.Paused() {
					return c, nil
				}
			}
		},
		Log:        r.log,
		PauseAt:    r.pauseAt,
		Checkpoint: runCheckpoint(cfg),
	}
}

// runCheckpoint is where faults that strike at the run's checkpoint stop a
// client: --checkpoint, or the design's first (Resolve checked it is one).
func runCheckpoint(cfg Resolved) string {
	if cfg.Checkpoint == "" && len(cfg.Design.Checkpoints) > 0 {
		return cfg.Design.Checkpoints[0]
	}
	return cfg.Checkpoint
}

// recordFaults has e record each strike of a fault aimed at aim: its
// start, and its stop, which says when the heal began only when the heal
// restarted something. A fault's strikes come one at a time (every,
// runSplit), so one snapshot of what runs serves them all.
func (r *run) recordFaults(e *faults.Env, servers []*cluster.Node, aim history.Aim) {
	var before []any
	e.Started = func(s faults.Strike) {
		before = r.running(servers)
		r.faultEvent(history.Record{Type: history.FaultStart, Fault: s.Fault, Target: s.Target, Moment: s.Moment,
			Point: s.Point, Aim: aim, Asked: int64(s.Asked)}, 0)
	}
	e.Stopped = func(fault, target string, healing time.Duration) {
		if before == nil || slices.Equal(before, r.running(servers)) {
			healing = 0 // restarted nothing: however slow, the heal was the strike's
		}
		r.faultEvent(history.Record{Type: history.FaultStop, Fault: fault, Target: target}, healing)
	}
}

// running is what a strike's heal may restart: how often each server has
// started, and each client's worker. A strike whose stop finds them
// changed restarted something (a killed server, a killed client).
func (r *run) running(servers []*cluster.Node) []any {
	var out []any
	for _, n := range servers {
		out = append(out, n.Starts())
	}
	for i := range r.cfg.Clients {
		out = append(out, r.worker(i))
	}
	return out
}

// faultEvent records a fault's start or stop. A stop whose heal restarted
// something says when the heal began (healing before it): the rest is the
// restart's own time, which the summary reports as such.
func (r *run) faultEvent(rec history.Record, healing time.Duration) {
	rec.Time = clock.Mono()
	rec.Process, rec.F = history.NemesisProcess, "fault"
	if healing > 0 {
		rec.HealStart = rec.Time - int64(healing)
	}
	r.hist.Append(rec)
	r.log.Info(string(rec.Type), "fault", rec.Fault, "target", rec.Target, "moment", rec.Moment)
}

func (r *run) worker(i int) *worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.workers[i]
}

// startWorker spawns one client process and a reader for its messages.
func (r *run) startWorker(wc WorkerConfig, seqBase int) (*worker, error) {
	// The log goes on after a crashed client's earlier process.
	logf, err := r.logs.open(filepath.Join(r.dir, reports.WorkerLogDir), wc.Client)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("worker pipe: %w", err)
	}
	// The client's name on the command line tells workers apart in ps.
	name := fmt.Sprintf("c%d", wc.Client)
	// In a lab the worker, and the exec client it starts, have the
	// client's own namespace and address.
	net, err := r.cluster.ClientNet(name)
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	proc, err := cluster.Start(cluster.Spec{Name: name, Path: r.exe, Args: []string{WorkerCommand, name}, Env: workerEnv(),
		Dir: r.dir, Stdin: inR, Stdout: outW, Log: logf, Net: net})
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	w := &worker{id: wc.Client, wc: wc, proc: proc, stdin: inW, seqBase: seqBase, maxSeq: seqBase, clock: trueClock,
		ready: make(chan struct{})}
	w.read.Add(1)
	go r.readWorker(w, outR)
	line, _ := json.Marshal(wc)
	if _, err := inW.Write(append(line, '\n')); err != nil {
		return w, fmt.Errorf("configure worker c%d: %w", wc.Client, err)
	}
	return w, nil
}

// readWorker copies a worker's records into the history.
func (r *run) readWorker(w *worker, out *os.File) {
	defer w.read.Done()
	defer out.Close()
	defer w.started() // a worker that exited will not start
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var dec messageDecoder
	for sc.Scan() {
		var m message
		if err := dec.decode(sc.Bytes(), &m); err != nil {
			r.log.Warn("bad line from worker", "client", w.id, "err", err)
			continue
		}
		if m.Record != nil {
			m.Record.Process = w.id
			m.Record.Seq += w.seqBase
			r.mu.Lock()
			w.maxSeq = max(w.maxSeq, m.Record.Seq)
			r.mu.Unlock()
			r.hist.Append(*m.Record)
			if m.Record.Type == history.Invoke {
				switch m.Record.F {
				case history.FAcquire:
					r.moments.notify(faults.MomentAcquire, w.id)
				case history.FRelease:
					r.moments.notify(faults.MomentRelease, w.id)
				}
			}
			if m.Record.Type == history.ClientFailed {
				w.failed = true
				w.started()
				// The user's to read and fix: one plain line, not a log record.
				fmt.Fprintf(r.obs.Stderr, "locktest: %s; worker stopped, its op in flight is unknown (worker log: %s)\n",
					m.Record.Error, filepath.Join(r.dir, reports.WorkerLogDir, fmt.Sprintf("c%d.log", w.id)))
			}
		}
		if m.InCS {
			r.moments.notify(faults.MomentGrant, w.id)
		}
		if m.Ready {
			w.started()
		}
		if m.Paused != "" {
			r.pauses.stopped(r, w)
		}
		if m.Clock != nil {
			r.log.Info("client clock", "client", w.id, "offset", m.Clock.Offset, "rate", m.Clock.Rate, "skew", m.Clock.Skew)
		}
	}
}

// stopWorkers asks every worker to finish its cycle and exit; stragglers
// (and every worker when interrupted, or once ctx ends) are killed.
// Idempotent. It runs when no fault runs any more.
func (r *run) stopWorkers(ctx context.Context, now bool) {
	r.mu.Lock()
	workers := append([]*worker(nil), r.workers...)
	r.mu.Unlock()
	for _, w := range workers {
		if w.stdin == nil {
			continue
		}
		if now {
			_ = w.proc.Kill()
		} else {
			_ = w.proc.Resume() // a worker paused by a fault cannot stop
			_, _ = w.stdin.Write([]byte(stopLine + "\n"))
		}
	}
	deadline := time.After(stopGrace(r.cfg.Config))
	for _, w := range workers {
		if w.stdin == nil {
			continue
		}
		select {
		case <-w.proc.Done():
		case <-ctx.Done():
			_ = w.proc.Kill()
		case <-deadline:
			r.log.Warn("worker did not stop in time; killing", "client", w.id)
			_ = w.proc.Kill()
		}
		w.stdin.Close()
		w.stdin = nil
		w.read.Wait()
		if exited, err := w.proc.Exited(); exited && err != nil && !now && !w.failed {
			r.log.Warn("worker exited with error", "client", w.id, "err", err)
		}
	}
}

// stopGrace is how long a worker told to stop may take to finish its
// cycle (an acquire, a hold, a write and a release) before it is killed.
func stopGrace(cfg scenario.Config) time.Duration {
	return time.Duration(cfg.AcquireTimeout) + 2*time.Duration(cfg.IOTimeout) + time.Duration(cfg.HoldMax) + 5*time.Second
}

// finalReadTimeout bounds each read of the final read.
const finalReadTimeout = 5 * time.Second

// afterEnd bounds how long after its run-end mark a run goes on writing
// its history: the workers' quiet end, then one read per key.
func afterEnd(cfg scenario.Config) time.Duration {
	return stopGrace(cfg) + time.Duration(cfg.Keys)*finalReadTimeout + history.AppendSkew
}

// finalRead records the protected data's final values: the last op of the
// counter check, which exposes any write that landed but was not
// acknowledged as it should have been. The data is on the resource node,
// or, for a design that guards its own writes, in its servers, read through
// a lock client of the coordinator's own that dials them directly.
func (r *run) finalRead(ctx context.Context, resource *cluster.Node, dep impls.Deployment, lockCfg lock.Config) error {
	var store workloads.Store
	switch {
	case resource != nil:
		res := workloads.NewResource(resource.Addr(), finalReadTimeout, r.cfg.Fencing)
		defer res.Close()
		store = res
	case r.cfg.Workload.NeedsResource && r.cfg.Design.GuardsWrites:
		lockCfg.Client, lockCfg.Nodes, lockCfg.IOTimeout = -1, nil, finalReadTimeout
		for _, n := range dep.Nodes {
			lockCfg.Nodes = append(lockCfg.Nodes, n.Addr())
		}
		client, err := r.cfg.Design.New(lockCfg)
		if err != nil {
			return fmt.Errorf("final read: %s client: %w", r.cfg.Design.Name, err)
		}
		defer client.Close()
		gs, ok := client.(lock.GuardedStore)
		if !ok {
			return fmt.Errorf("final read: design %s guards its writes, and its lock is no lock.GuardedStore", r.cfg.Design.Name)
		}
		store = gs
	default:
		return nil
	}
	for i, key := range r.keys {
		rec := history.Record{Process: history.NemesisProcess, Seq: i + 1, Type: history.Invoke, F: history.FRead, Key: key, Time: clock.Mono()}
		r.hist.Append(rec)
		v, err := store.Read(ctx, key, 0)
		rec.Time = clock.Mono()
		if err != nil {
			rec.Type, rec.Error = history.Fail, err.Error()
		} else {
			rec.Type, rec.Value = history.OK, history.Int64(v)
		}
		r.hist.Append(rec)
	}
	return nil
}

// Analyze checks the history in dir and writes the report. cfg supplies the
// scenario; Analyze needs no server.
func Analyze(dir string, cfg Resolved) (reports.Results, error) { return analyze(dir, cfg, true, nil) }

// Recheck checks the history in dir like Analyze but writes nothing: the run
// directory keeps the report it has. For a quick verdict on a history too
// long to be worth drawing: with no report to draw, it streams the history
// (checkStream), in memory that does not grow with its length.
func Recheck(dir string, cfg Resolved) (reports.Results, error) { return analyze(dir, cfg, false, nil) }

// analyze checks and, when write, writes the report, calling writing (if
// set) as it begins to: a check and a report take long enough on a long
// history that a progress display tells them apart.
func analyze(dir string, cfg Resolved, write bool, writing func()) (reports.Results, error) {
	res := reports.Results{Scenario: cfg.Scenario, Impl: cfg.Impl, Design: cfg.ExecName, Workload: cfg.Workload.Name, Faults: cfg.Config.Faults,
		Seed: cfg.Seed, Clients: cfg.Clients, Network: cfg.Network, Command: cfg.reproduce(), Config: cfg.Config, Dir: dir,
		Locktest: reports.CurrentBuild(), Timeouts: runTimeouts(cfg)}
	if cfg.NetworkNote != "" {
		res.Notes = append(res.Notes, cfg.NetworkNote)
	}
	offs, offNotes, drift, err := readOffsets(dir)
	if err != nil {
		return res, err
	}
	res.ClockOffsets = offs
	res.Notes = append(res.Notes, offNotes...)
	switch {
	case len(cfg.Nodes) > 0:
		res.Notes = append(res.Notes, fmt.Sprintf("the servers ran on --nodes %s; histories are stamped on this host, whose clock the hosts' may not share (offsets above), and server versions are not asked there",
			strings.Join(cfg.Nodes, ",")))
	case len(cfg.Servers) == 0:
		res.Servers = cluster.ServerVersions(slices.Collect(maps.Keys(binaries(cfg))))
	default:
		// The probe asks the binaries installed here, which say nothing of
		// servers the user runs, and the resource's redis-server would
		// read as the lock's: no versions at all.
		res.Notes = append(res.Notes, fmt.Sprintf("the lock servers were yours (--servers %s): locktest did not start them and does not know their version",
			strings.Join(cfg.Servers, ",")))
	}
	if write {
		// Before the check, which may take minutes: its report would have
		// nowhere to go.
		if err := probeWritable(dir); err != nil {
			return res, unwritable(dir, err)
		}
	}
	defer limitHeap(filepath.Join(dir, reports.HistoryFile), write)()
	found, err := checkHistory(dir, cfg, drift, write)
	if err != nil {
		return res, err
	}
	if found.truncated {
		res.Truncated = true
		res.Notes = append(res.Notes, "the history's last line was cut off (killed run): checked the complete prefix")
	}
	res.Records = found.scan.records
	if found.window != "" {
		res.Notes = append(res.Notes, found.window)
	}
	res.Notes = append(res.Notes, truncatedLogs(dir)...)
	res.Checks, res.Metrics = found.checks, found.metrics
	res.Verdict = res.Checks.Verdict(cfg.Workload.NeedsResource)
	if cfg.Workload.NeedsResource && !cfg.Design.GuardsWrites && found.scan.tokens {
		res.Fencing = cfg.Fencing
	}
	for _, e := range found.scan.broken {
		res.BrokenClients++
		res.Notes = append(res.Notes, "worker stopped: "+e)
	}
	if res.BrokenClients > 0 && res.Verdict == checker.Valid {
		// The checks passed on what the clients did before they broke;
		// that is no evidence the lock is safe.
		res.Verdict = checker.Unknown
		res.Notes = append(res.Notes, fmt.Sprintf("verdict unknown, not valid: %d lock client(s) broke and stopped", res.BrokenClients))
	}
	if res.Verdict == checker.Valid && !found.scan.answered {
		// Nothing was tested: a run interrupted during start-up, or a
		// client that never got an answer, is no evidence of safety.
		res.Verdict = checker.Unknown
		res.Notes = append(res.Notes, "verdict unknown, not valid: no client operation completed, so nothing was tested")
	}
	res.Health = found.health
	var notes []string
	res.Verdict, notes = res.Health.Judge(res.Verdict)
	res.Notes = append(res.Notes, notes...)
	res.DecidedBy = checker.MutexCheck
	if cfg.Workload.NeedsResource {
		res.DecidedBy = checker.ResourceCheck
		if res.Checks.Stats.Final == nil && (res.Health == nil || !res.Health.NoFinalRead) {
			res.Notes = append(res.Notes, "no final read of the resource: lost updates are counted from overlapping reads only")
		}
	}
	// The run's samples of its processes, summed up here so that every
	// summary, printed or written, shows the same figures.
	samples, err := reports.ReadSamples(dir)
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("%v: the memory figures cover the samples before it", err))
	}
	res.Resources = reports.Summarize(samples)
	if !write {
		return res, nil
	}
	if writing != nil {
		writing()
	}
	if err := reports.Write(res, found.recs); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return res, unwritable(dir, err)
		}
		return res, err
	}
	return res, nil
}

// probeWritable reports whether a file can be made in dir, as the report
// will be: a read-only file system or a directory of another user's.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// unwritable is the one line for a run directory the report cannot be
// written into (err may join several files' errors: the first says it).
func unwritable(dir string, err error) error {
	first, _, _ := strings.Cut(err.Error(), "\n")
	return bad("cannot write the report into %s (%s); give --no-report to check it without writing", dir, first)
}
