package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/scenario"
	"github.com/locktest/locktest/seed"
	"github.com/locktest/locktest/workloads"
)

// The coordinator–worker protocol, one JSON object per line:
//
//	coordinator → worker (stdin):  a WorkerConfig, then control lines:
//	                               "clock OFFSET_NS RATE" skews the clock the
//	                               lock reads (answered by a clock message);
//	                               "pause-at POINT", "disarm" and "continue"
//	                               stop it at a checkpoint (pauseAtLine).
//	                               "stop" asks it to finish and exit. EOF
//	                               without "stop" means the coordinator
//	                               died: the worker exits at once.
//	worker → coordinator (stdout): message lines.

// WorkerCommand is the hidden command a worker process runs: the
// coordinator spawns os.Executable() with it and the client's name. A
// binary that is not cli.Main's (a test binary under locktesting) must
// hand this command to cli.Main before doing anything else.
const WorkerCommand = "worker"

// stopLine asks a worker to finish its current cycle and exit.
const stopLine = "stop"

// pauseAtLine arms a worker to stop when its lock client next reaches the
// named checkpoint (lock.Config.Checkpoint); disarmLine cancels that. The
// worker reports the checkpoint and waits there for continueLine, which
// the coordinator sends once it has stopped the worker (SIGSTOP), or at
// once if it does not want it: a signal from outside lands wherever the
// process happens to be, this lands at one instruction.
const (
	pauseAtLine  = "pause-at "
	disarmLine   = "disarm"
	continueLine = "continue"
)

// clockLine returns the control line that skews a worker's lock clock.
func clockLine(offset time.Duration, rate float64) string {
	return fmt.Sprintf("clock %d %g", int64(offset), rate)
}

// WorkerConfig is everything a worker process needs.
type WorkerConfig struct {
	Client   int               `json:"client"`
	Impl     string            `json:"impl"`
	Workload string            `json:"workload"`
	Lock     lock.Config       `json:"lock"`
	Resource string            `json:"resource,omitempty"` // resource address
	Keys     []string          `json:"keys"`
	HoldMin  scenario.Duration `json:"hold_min"`
	HoldMax  scenario.Duration `json:"hold_max"`
	// Batch says that nothing in the run acts on this client at the moment
	// it reports something (faults.Injects is false: the control
	// run), so the worker writes its messages in batches (lineSink).
	Batch bool `json:"batch,omitempty"`
	// Fencing is what the resource checks tokens on (Config.Fencing).
	Fencing string `json:"fencing,omitempty"`
}

// message is one line from a worker: a history record, a note that the
// worker entered its critical section, the clock it now reads, the armed
// checkpoint it is waiting at, or that its lock client is set up (an exec
// program answered init) and its workload begins.
type message struct {
	Record *history.Record `json:"r,omitempty"`
	InCS   bool            `json:"cs,omitempty"`
	Clock  *clockAck       `json:"clock,omitempty"`
	Paused string          `json:"paused,omitempty"`
	Ready  bool            `json:"ready,omitempty"`
}

// clockAck confirms a clock line: the skew is the lock clock minus the
// host's wall clock, measured by the worker right after the change.
type clockAck struct {
	Offset time.Duration `json:"offset"`
	Rate   float64       `json:"rate"`
	Skew   time.Duration `json:"skew"`
}

// lineSink writes messages to the coordinator. Each write(2) costs the
// worker a syscall and the coordinator a wake-up, and a cycle makes five
// messages, so the sink writes only when the coordinator needs a message
// now, with everything buffered before it:
//
//   - an invoke must be in the pipe before its operation can take effect:
//     a SIGKILLed worker (kill-holder) must not leave an effect on a server
//     that no invoke in the history accounts for;
//   - a critical-section note, a checkpoint reached, a clock acknowledgement
//     and a broken client drive the coordinator's faults and logs.
//
// A completion waits for the next such message, at most flushDelay: one
// lost to a kill reads as an unknown outcome, which it then is. The
// critical-section note that follows a buffered completion (mutex's
// acquire ok) rides on that completion's line rather than a line of its own.
//
// In a batch sink (WorkerConfig.Batch: no fault of the run kills, stops
// or waits for a client) invokes and critical-section notes wait too, and
// the sink writes what it holds every flushDelay: some ten records a write
// instead of three writes a lock cycle, each of them a syscall here and a
// wake-up of the coordinator there. The records and their times are the
// same; they reach the history up to flushDelay later. Only a worker killed
// from outside the run (an interrupted run, whose history is not checked,
// or a kill by hand) loses what it held, invokes included.
type lineSink struct {
	mu      sync.Mutex
	out     io.Writer
	batch   bool
	buf     []byte
	pending *message // the last message, not yet encoded into buf
	timer   *time.Timer
	armed   bool // timer will flush what is buffered
}

// flushDelay bounds how long a completion (or, in a batch sink, any
// record) waits in a worker's buffer.
const flushDelay = 5 * time.Millisecond

// maxBatch is how much a batch sink buffers before it writes at once.
const maxBatch = 32 << 10

func newLineSink(out io.Writer, batch bool) *lineSink { return &lineSink{out: out, batch: batch} }

// flushLater is the timer's flush of a completion no urgent message took.
func (s *lineSink) flushLater() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	s.flushLocked()
}

// send queues m, and writes it and what is queued before it if urgent.
func (s *lineSink) send(m message, urgent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.InCS && m.Record == nil && s.pending != nil && s.pending.Record != nil && !s.pending.InCS {
		s.pending.InCS = true
	} else {
		s.encodePending()
		s.pending = &m
	}
	switch {
	case urgent || len(s.buf) >= maxBatch:
		if s.armed {
			s.timer.Stop()
			s.armed = false
		}
		s.flushLocked()
	case s.timer == nil:
		s.armed = true
		s.timer = time.AfterFunc(flushDelay, s.flushLater)
	case !s.armed:
		s.armed = true
		s.timer.Reset(flushDelay)
	}
}

// encodePending appends the pending message to buf; s.mu held.
func (s *lineSink) encodePending() {
	if s.pending == nil {
		return
	}
	s.buf = append(appendMessage(s.buf, s.pending), '\n')
	s.pending = nil
}

// appendMessage appends m as json.Marshal writes it. A record, with or
// without its critical-section note, is most of what a worker sends (four
// a lock cycle) and is written directly (history.AppendJSON); the rest go
// through encoding/json.
func appendMessage(dst []byte, m *message) []byte {
	if m.Record != nil && m.Clock == nil && m.Paused == "" && !m.Ready {
		dst = history.AppendJSON(append(dst, `{"r":`...), m.Record)
		if m.InCS {
			dst = append(dst, `,"cs":true`...)
		}
		return append(dst, '}')
	}
	line, err := json.Marshal(m)
	if err != nil { // a message always encodes; this is a bug
		panic(fmt.Errorf("encode message: %w", err))
	}
	return append(dst, line...)
}

// messageDecoder reads a worker's lines. The lines appendMessage writes
// for records it parses itself (history.Decoder), several times faster
// than encoding/json, which has every other line and the last word.
type messageDecoder struct {
	dec history.Decoder
	rec history.Record
}

// decode parses line into m. m.Record, when set, may point into d and is
// good until the next call.
func (d *messageDecoder) decode(line []byte, m *message) error {
	*m = message{}
	if rest, ok := bytes.CutPrefix(line, []byte(`{"r":`)); ok {
		d.rec = history.Record{}
		if rest, ok := d.dec.Prefix(rest, &d.rec); ok {
			switch string(rest) {
			case "}":
				m.Record = &d.rec
				return nil
			case `,"cs":true}`:
				m.Record, m.InCS = &d.rec, true
				return nil
			}
		}
	}
	return json.Unmarshal(line, m)
}

// flushLocked writes everything queued in one write; s.mu held.
func (s *lineSink) flushLocked() {
	s.encodePending()
	if len(s.buf) == 0 {
		return
	}
	if _, err := s.out.Write(s.buf); err != nil {
		// The coordinator is gone; nobody is left to record for.
		exitOrphaned()
	}
	s.buf = s.buf[:0]
}

// close writes what is queued; the worker is about to exit.
func (s *lineSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.armed = false
	s.flushLocked()
}

func (s *lineSink) Record(r history.Record) {
	s.send(message{Record: &r}, r.Type == history.ClientFailed || r.Type == history.Invoke && !s.batch)
}
func (s *lineSink) InCriticalSection() { s.send(message{InCS: true}, !s.batch) }

// sysmonSetting is the GODEBUG setting a worker runs with: a scheduler
// trace every 2^31-1 ms (24.8 days), which is to say none, whose effect is
// that the runtime's monitor thread (sysmon) never enters its deep sleep.
// A worker's one P goes idle at every round trip to a server; sysmon then
// sleeps until the next syscall wakes it (a futex call), starts over at
// 20 µs naps and sleeps again at the next idle moment: several wake-ups of
// a second thread per lock cycle, which took a third of the worker's CPU
// (golang/go#18236; /proc/PID/task shows it, a CPU profile does not).
// Awake, it backs off to naps of 10 ms. The trace's one line, at start-up
// when the host's monotonic clock is past 24.8 days, goes to the worker's
// log. Only the worker has it: Worker takes it out of the environment its
// lock client's programs inherit.
const sysmonSetting = "schedtrace=2147483647"

// workerEnv is what a worker's environment adds to the coordinator's:
// sysmonSetting, unless GODEBUG already sets a schedtrace of its own.
func workerEnv() []string {
	godebug := os.Getenv("GODEBUG")
	for _, kv := range strings.Split(godebug, ",") {
		if strings.HasPrefix(kv, "schedtrace=") {
			return nil
		}
	}
	if godebug == "" {
		return []string{"GODEBUG=" + sysmonSetting}
	}
	return []string{"GODEBUG=" + godebug + "," + sysmonSetting}
}

// dropSysmonSetting gives the environment back the GODEBUG the coordinator
// had, for the programs a lock client starts. The runtime read it at
// start-up; changing it now changes only settings that may change at run
// time, and schedtrace is not one.
func dropSysmonSetting() {
	switch godebug := os.Getenv("GODEBUG"); {
	case godebug == sysmonSetting:
		os.Unsetenv("GODEBUG")
	case strings.HasSuffix(godebug, ","+sysmonSetting):
		os.Setenv("GODEBUG", strings.TrimSuffix(godebug, ","+sysmonSetting))
	}
}

// exitOrphaned ends a worker whose coordinator is gone, and with it every
// process its lock client started.
func exitOrphaned() {
	cluster.KillDescendants()
	os.Exit(3)
}

// Worker is the body of the hidden `locktest worker` command: it reads its
// config from in, runs the workload and streams messages to out. Whatever
// its lock client started, however deep or detached, dies before it
// returns: the worker is the subreaper of its tree.
func Worker(in io.Reader, out io.Writer) (retErr error) {
	if err := cluster.BecomeSubreaper(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	// A worker is one client doing one thing at a time, and waits on the
	// network between its steps. With a second P the runtime wakes another
	// thread to look for work at every wake-up and finds none: futex calls
	// and context switches that cost a busy machine more than the work.
	// One P took the workers' CPU per lock cycle down 15-20%.
	runtime.GOMAXPROCS(1)
	dropSysmonSetting()
	defer cluster.KillDescendants()
	br := bufio.NewReader(in)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("worker: read config: %w", err)
	}
	var cfg WorkerConfig
	if err := json.Unmarshal(line, &cfg); err != nil {
		return fmt.Errorf("worker: parse config: %w", err)
	}
	wl, err := workloads.Lookup(cfg.Workload)
	if err != nil {
		return err
	}
	design, err := impls.Lookup(cfg.Impl)
	if err != nil {
		return err
	}
	sink := newLineSink(out, cfg.Batch)
	defer sink.close()
	// failed tells the coordinator why this worker stops early; it names
	// the worker and what its lock client did.
	failed := func(err error) error {
		sink.Record(history.Record{Type: history.ClientFailed, Time: clock.Mono(), Error: err.Error()})
		return err
	}
	// A panic, typically in a user's Go lock client, is a broken client
	// too: say so rather than vanish with the op in flight unexplained.
	defer func() {
		if p := recover(); p != nil {
			slog.Error("worker panicked", "client", cfg.Client, "panic", p, "stack", string(debug.Stack()))
			retErr = failed(fmt.Errorf("c%d: panic in the %s client or the %s workload: %v (stack in the worker log)",
				cfg.Client, design.Name, wl.Name, p))
		}
	}()
	skew := clock.NewSkewed()
	cfg.Lock.Clock = skew
	var armed checkpointArm
	cont := make(chan struct{}, 1)
	cfg.Lock.Checkpoint = func(point string) {
		if armed.take(point) {
			sink.send(message{Paused: point}, true)
			<-cont
		}
	}
	client, err := design.New(cfg.Lock)
	if err != nil {
		if !lock.IsBroken(err) { // a broken lock client names the worker itself
			err = fmt.Errorf("c%d: %s client: %w", cfg.Client, design.Name, err)
		}
		return failed(err)
	}
	defer client.Close()
	if _, ok := client.(lock.Renewer); wl.NeedsRenew && !ok {
		return failed(fmt.Errorf("c%d: workload %s renews, and the %s lock is no lock.Renewer", cfg.Client, wl.Name, design.Name))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stopping atomic.Bool
	go func() {
		for {
			l, err := br.ReadString('\n')
			var off int64
			var rate float64
			switch {
			case l == stopLine+"\n":
				stopping.Store(true)
				armed.set("")
				cancel()
				continue
			case strings.HasPrefix(l, pauseAtLine) && !stopping.Load():
				armed.set(strings.TrimSpace(strings.TrimPrefix(l, pauseAtLine)))
				continue
			case l == disarmLine+"\n":
				armed.set("")
				continue
			case l == continueLine+"\n":
				cont <- struct{}{}
				continue
			}
			if n, _ := fmt.Sscanf(l, "clock %d %g", &off, &rate); n == 2 {
				skew.Set(time.Duration(off), rate)
				sink.send(message{Clock: &clockAck{Offset: time.Duration(off), Rate: rate, Skew: skew.Now().Sub(time.Now())}}, true)
				continue
			}
			if err != nil {
				if !stopping.Load() {
					slog.Error("coordinator gone; exiting", "client", cfg.Client)
					exitOrphaned()
				}
				return
			}
		}
	}()

	env := &workloads.Env{
		Client:   cfg.Client,
		Lock:     client,
		Keys:     cfg.Keys,
		Rand:     seed.Stream(cfg.Lock.Seed, seed.Workloads, cfg.Client),
		HoldMin:  time.Duration(cfg.HoldMin),
		HoldMax:  time.Duration(cfg.HoldMax),
		TTL:      cfg.Lock.TTL,
		Sink:     sink,
		Stopping: stopping.Load,
	}
	switch gs, guards := client.(lock.GuardedStore); {
	case wl.NeedsResource && design.GuardsWrites && guards:
		env.Resource = gs
	case wl.NeedsResource && design.GuardsWrites:
		return failed(fmt.Errorf("c%d: design %s guards its writes, and its lock is no lock.GuardedStore", cfg.Client, design.Name))
	case wl.NeedsResource:
		res := workloads.NewResource(cfg.Resource, cfg.Lock.IOTimeout, cfg.Fencing)
		defer res.Close()
		env.Resource = res
	}
	// The coordinator holds the run's faults until every worker says this
	// (or broke): a fault that struck a client still starting would test
	// its start-up, not its lock.
	sink.send(message{Ready: true}, true)
	wl.Run(ctx, env)
	if env.Err != nil {
		return failed(env.Err)
	}
	return nil
}

// checkpointArm is the checkpoint a worker is armed to stop at, if any.
type checkpointArm struct {
	mu    sync.Mutex
	point string
}

func (a *checkpointArm) set(point string) {
	a.mu.Lock()
	a.point = point
	a.mu.Unlock()
}

// take reports whether the worker is armed for point, disarming it.
func (a *checkpointArm) take(point string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.point == "" || a.point != point {
		return false
	}
	a.point = ""
	return true
}
