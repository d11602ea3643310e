package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"
)

// Type says what a record is: the start of an operation, one of its three
// possible completions, or a fault event.
type Type string

const (
	Invoke Type = "invoke"
	// OK: the operation took effect and its result is known.
	OK Type = "ok"
	// Fail: the operation definitely did not take effect.
	Fail Type = "fail"
	// Info: the operation may or may not have taken effect (timeout, lost
	// connection, a worker that died). Never rewrite it as ok or fail.
	Info Type = "info"
	// FaultStart and FaultStop bracket a fault on the same clock as the ops.
	FaultStart Type = "fault-start"
	FaultStop  Type = "fault-stop"
	// ClientFailed says a worker's lock client broke (crashed, hung, broke
	// the protocol) and the worker stopped; Error says how. Its op in flight
	// is info, and the run's verdict cannot be valid.
	ClientFailed Type = "client-failed"
	// RunStart and RunEnd are the coordinator's marks: the run's duration
	// began (Asked holds it), and the final heal was done (Lag says how late
	// the coordinator woke meanwhile). They let a report say whether the
	// harness kept the timing it was asked for.
	RunStart Type = "run-start"
	RunEnd   Type = "run-end"
)

// Operation names used by workloads and the checker.
const (
	FAcquire = "acquire"
	FRelease = "release"
	// FIncr is a whole critical section on the protected resource: read v,
	// write v+1. Value holds v.
	FIncr = "incr"
	// FRead reads the protected resource without changing it (the final read).
	FRead = "read"
	// FCrash is recorded by the coordinator, per key, when it kills a client
	// (kill-holder). It never completes: whatever lock the dead client held
	// may be freed (its lease runs out) at any time from then on.
	FCrash = "crash"
	// FRenew extends a held lease. The checks do not model it: a refused
	// renewal tells the client to stop, and its release then says the rest.
	FRenew = "renew"
)

// RejectedError is the error text a workload records for a write the
// resource refused because its fencing token was stale.
const RejectedError = "stale token rejected"

// NemesisProcess is the process number of fault events and of the
// coordinator's own operations.
const NemesisProcess = -1

// Record is one line of history.jsonl.
type Record struct {
	Index   int    `json:"index"`
	Process int    `json:"process"`
	Seq     int    `json:"seq,omitempty"` // pairs an invoke with its completion
	Type    Type   `json:"type"`
	F       string `json:"f"`
	Key     string `json:"key,omitempty"`
	// Value: for incr the resource value read (v+1 was written); for read the
	// value observed.
	Value *int64 `json:"value,omitempty"`
	// Token is the fencing token of an acquisition (0 when unfenced).
	Token int64 `json:"token,omitempty"`
	// Validity is on an ok acquire or renew: how long the lock said its
	// lease was still valid, in ns (0 when it said nothing). The lease
	// judge reads it: a lock that claims a lease after being stopped inside
	// its own acquire is wrong inside the lease.
	Validity int64 `json:"validity,omitempty"`
	// Time is CLOCK_MONOTONIC in nanoseconds, shared by all processes.
	Time int64 `json:"time"`
	// Cmds counts store commands the lock client sent for this operation.
	Cmds  int    `json:"cmds,omitempty"`
	Error string `json:"error,omitempty"`
	// Fault and Target describe fault events.
	Fault  string `json:"fault,omitempty"`
	Target string `json:"target,omitempty"`
	// Moment is the lock moment a fault start was aligned to (faults.Moments).
	Moment string `json:"moment,omitempty"`
	// Point is the checkpoint inside a client's lock call where the fault
	// stopped it (pause-at, pause-acquire): the client's own logic after
	// that point ran after the strike.
	Point string `json:"point,omitempty"`
	// Aim is on a fault-start: whom the fault strikes, which decides how
	// its effect is judged (checker.Efficacy), from the history alone.
	Aim Aim `json:"aim,omitempty"`
	// Asked is the length asked for, in ns: of the run on run-start, of the
	// fault on a fault-start that keeps the plain schedule (0 when the fault
	// holds by its own logic, as failover does).
	Asked int64 `json:"asked,omitempty"`
	// HealStart is on a fault-stop whose heal took time (a killed server
	// restarted and serving again): when the heal began. The strike lasted
	// until then as asked; the rest is the server's own recovery.
	HealStart int64 `json:"heal_start,omitempty"`
	// Lag is on run-end: how late the coordinator's ticker woke.
	Lag *Lag `json:"lag,omitempty"`
	// Stopped is on the run-end of a run ended before its duration
	// (--stop-on-violation): the checks that had found a violation.
	Stopped []string `json:"stopped,omitempty"`
}

// Lag is how late a periodic wake-up of the coordinator came, in ns: a
// saturated machine shows here before anything else.
type Lag struct {
	Ticks int   `json:"ticks"`
	P99   int64 `json:"p99"`
	Max   int64 `json:"max"`
}

// Int64 returns a pointer to v, for Record.Value.
func Int64(v int64) *int64 { return &v }

// Writer appends records to a JSON Lines file, assigning indexes. A write
// per record cost the coordinator a syscall per record under a mutex every
// worker's reader waits on, so records are buffered and written at most
// FlushEvery after they were appended, and on Close: a killed coordinator
// loses at most that much and leaves a readable prefix (ReadFile returns it
// with ErrTruncated when the last line was cut).
type Writer struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	size  int64 // written to f
	limit int64 // SegmentBytes, but in tests
	// segments closed, and their compressions under way.
	segments int
	zip      sync.WaitGroup
	bw       *bufio.Writer
	line     []byte // the record being encoded (AppendJSON)
	timer    *time.Timer
	armed    bool // the timer will flush what is buffered
	closed   bool
	next     int
	err      error
}

// FlushEvery bounds how long an appended record stays in the Writer's
// buffer: those a killed coordinator can lose, and how far a reader of the
// live file (a test waiting for a fault) lags.
const FlushEvery = 50 * time.Millisecond

// Create opens path for writing a new history.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create history: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	return &Writer{path: path, f: f, bw: bw, limit: SegmentBytes}, nil
}

// Append assigns the next index to r, buffers it and returns it. Records
// arrive from many processes; the index is arrival order, Time is the truth.
func (w *Writer) Append(r Record) Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.Index = w.next
	w.next++
	if w.closed {
		w.fail(errors.New("append after close"))
		return r
	}
	w.line = append(AppendJSON(w.line[:0], &r), '\n')
	n, err := w.bw.Write(w.line)
	w.fail(err)
	if w.size += int64(n); w.size >= w.limit && w.err == nil {
		w.fail(w.rotate())
	}
	switch {
	case w.timer == nil:
		w.timer = time.AfterFunc(FlushEvery, w.flushLater)
	case !w.armed:
		w.timer.Reset(FlushEvery)
	}
	w.armed = true
	return r
}

// Flush writes what is buffered now: a mark a reader of the live file is
// about to look for (the run's start, which a progress display times the
// run from) must not wait for the timer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.fail(w.bw.Flush())
	}
	return w.err
}

// rotate closes the file as the history's next segment, compresses it in
// the background and goes on in a new file of the same name; w.mu held.
// Readers see the records of both in order at every moment (pieces).
func (w *Writer) rotate() error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	w.segments++
	seg := segmentName(w.path, w.segments)
	if err := os.Rename(w.path, seg); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	w.bw.Reset(f)
	w.zip.Go(func() {
		// Uncompressed, the segment is still read; it only takes room.
		if err := compress(seg); err != nil {
			slog.Warn("history: segment left uncompressed", "err", err)
		}
	})
	return nil
}

// flushLater is the timer's flush of what Append buffered.
func (w *Writer) flushLater() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if !w.closed {
		w.fail(w.bw.Flush())
	}
}

// fail keeps the first error; w.mu held.
func (w *Writer) fail(err error) {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("write history: %w", err)
	}
}

// Close writes what is buffered, closes the file and reports the first
// write error, if any.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.fail(w.bw.Flush())
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("close history: %w", err)
	}
	w.zip.Wait()
	return w.err
}

// ErrTruncated reports that the last line of a history was cut off, as
// happens when the coordinator is killed while writing it. The records
// before it are returned with it.
var ErrTruncated = errors.New("history truncated: last line incomplete")

// ReadFile reads a history. A malformed last line (a killed run) yields the
// complete prefix and ErrTruncated; a malformed line elsewhere is an error.
func ReadFile(path string) ([]Record, error) {
	f, err := Open(path, 0)
	if err != nil {
		return nil, err
	}
	// Counting the lines first sizes the records once: a long history grown
	// by appending would briefly hold two copies of them.
	lines, err := countLines(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if f, err = Open(path, 0); err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, lines+1)
}

// lastLine tells why a last line without its newline does not parse: cut
// off (ErrTruncated) when it is the start of one record, as a killed
// writer leaves it; damaged when it holds a whole record and more, as a
// history whose newlines were lost or replaced does.
func lastLine(line []byte, lineNo int) error {
	var v json.RawMessage
	err := json.NewDecoder(bytes.NewReader(line)).Decode(&v)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return ErrTruncated
	case err == nil:
		return fmt.Errorf("history line %d holds a whole record and more (%d bytes): the lines' ends were lost", lineNo, len(line))
	}
	return fmt.Errorf("history line %d: %w", lineNo, err)
}

func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Read parses JSON Lines records from r; see ReadFile.
func Read(r io.Reader) ([]Record, error) { return read(r, 0) }

func read(r io.Reader, capacity int) ([]Record, error) {
	recs := make([]Record, 0, capacity)
	s := NewScanner(r)
	for s.Scan() {
		recs = append(recs, s.Record())
	}
	return recs, s.Err()
}

// Scanner reads a history one record at a time, as Read does: a reader
// that keeps what it needs of each record, not the records, holds what it
// keeps. The error at the end is Read's (ErrTruncated for a cut-off last
// line).
type Scanner struct {
	br     *bufio.Reader
	dec    decoder
	long   []byte // a line longer than the buffer, pieced together
	lineNo int
	// pos is how many bytes were read; start where the record's line began.
	pos, start int64
	rec        Record
	done       bool
	err        error
}

// NewScanner reads records from r.
func NewScanner(r io.Reader) *Scanner {
	return &Scanner{br: bufio.NewReaderSize(r, 1<<20)}
}

// Scan reads the next record, and reports false at the end of the history
// or at an error (Err says which).
func (s *Scanner) Scan() bool {
	for !s.done {
		s.lineNo++
		line, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			s.long = append(s.long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = s.br.ReadSlice('\n')
				s.long = append(s.long, line...)
			}
			line = s.long
		}
		s.start, s.pos = s.pos, s.pos+int64(len(line))
		complete := err == nil
		if err != nil && err != io.EOF {
			s.done, s.err = true, fmt.Errorf("read history line %d: %w", s.lineNo, err)
			return false
		}
		s.done = !complete
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		s.rec = Record{}
		if jerr := s.dec.decode(trimmed, &s.rec); jerr != nil {
			s.done, s.err = true, fmt.Errorf("history line %d: %w", s.lineNo, jerr)
			if !complete {
				s.err = lastLine(trimmed, s.lineNo)
			}
			return false
		}
		if !complete {
			// A final line without its newline may be a cut that happens
			// to parse (a number cut short); the writer always ends lines.
			s.err = ErrTruncated
			return false
		}
		return true
	}
	return false
}

// Record returns the record Scan read.
func (s *Scanner) Record() Record { return s.rec }

// Offset returns where the line of the record Scan read begins, in bytes
// from where the Scanner began reading.
func (s *Scanner) Offset() int64 { return s.start }

// Err returns the error that ended the scan, nil at a clean end.
func (s *Scanner) Err() error { return s.err }

// Each calls fn with each record of r, in order, as a Scanner reads them,
// and where its line begins (Scanner.Offset), decoding on a goroutine of
// its own a batch or two ahead: decoding takes about as long as a check
// of what is decoded, and the two run side by side. fn must not keep the
// record it is given. Each stops at fn's first error and returns it; else
// it returns the Scanner's (ErrTruncated for a cut-off last line, after
// the records before it).
func Each(r io.Reader, fn func(rec *Record, offset int64) error) error {
	type batch struct {
		recs    []Record
		offsets []int64
	}
	out := make(chan batch, 2)
	stop, done := make(chan struct{}), make(chan struct{})
	var readErr error
	go func() {
		defer close(done)
		defer close(out)
		s := NewScanner(r)
		for {
			b := batch{make([]Record, 0, 4096), make([]int64, 0, 4096)}
			for len(b.recs) < cap(b.recs) && s.Scan() {
				b.recs, b.offsets = append(b.recs, s.Record()), append(b.offsets, s.Offset())
			}
			if len(b.recs) > 0 {
				select {
				case out <- b:
				case <-stop:
					return
				}
			}
			if len(b.recs) < cap(b.recs) {
				readErr = s.Err()
				return
			}
		}
	}()
	var err error
	for b := range out {
		for i := 0; err == nil && i < len(b.recs); i++ {
			err = fn(&b.recs[i], b.offsets[i])
		}
		if err != nil {
			close(stop)
			break
		}
	}
	<-done
	if err != nil {
		return err
	}
	return readErr
}

// Places remembers, every so many records of a history file, where a
// record's line begins and the latest time before it: where a reading of
// the records of a stretch of time can begin, instead of at the start.
type Places struct {
	records int
	latest  int64
	at      []place
}

type place struct{ offset, latest int64 }

// placeEvery is how many records go by between two places remembered: a
// reading begins up to that many records early, and a long history's
// places take little memory.
const placeEvery = 4096

// Add takes the next record of the history, whose line begins at offset.
func (p *Places) Add(r *Record, offset int64) {
	if p.records%placeEvery == 0 {
		p.at = append(p.at, place{offset, p.latest})
	}
	p.records++
	p.latest = max(p.latest, r.Time)
}

// From returns where a reading of every record timed t or later begins:
// every record before it is timed earlier.
func (p *Places) From(t int64) int64 {
	i := sort.Search(len(p.at), func(i int) bool { return p.at[i].latest >= t })
	if i == 0 {
		return 0
	}
	return p.at[i-1].offset
}

// Before is From(t) moved about n records earlier: where a reading that
// shows what led up to t begins.
func (p *Places) Before(t int64, n int) int64 {
	i := sort.Search(len(p.at), func(i int) bool { return p.at[i].latest >= t })
	if i == 0 {
		return 0
	}
	return p.at[max(0, i-1-n/placeEvery)].offset
}

// Last returns where a reading of about the last n records begins.
func (p *Places) Last(n int) int64 {
	if len(p.at) == 0 {
		return 0
	}
	return p.at[max(0, (p.records-n)/placeEvery)].offset
}

// Past reports whether a record timed t ends a reading of the records
// timed up to to: a record is appended before the history goes
// AppendSkew past its time, so every record timed up to to came before it.
func Past(t, to int64) bool { return t > to+int64(AppendSkew) }
