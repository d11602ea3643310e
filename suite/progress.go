package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// IsTerminal reports whether w is a terminal that can redraw a line.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Plain mode prints a heartbeat this often, so a CI log shows the suite is
// alive and where it is.
const heartbeat = 30 * time.Second

// progress shows the suite as it goes: on a terminal one status line
// redrawn twice a second (runs done/total, elapsed, each running scenario's
// ops and active fault); otherwise plain lines. Results are printed as
// lines in both modes.
type progress struct {
	w     io.Writer
	term  bool
	total int
	start time.Time

	mu      sync.Mutex
	done    int
	running map[int]*watch
	stop    chan struct{}
	stopped sync.WaitGroup
}

func newProgress(w io.Writer, term bool, total int) *progress {
	p := &progress{w: w, term: term, total: total, start: time.Now(), running: map[int]*watch{}, stop: make(chan struct{})}
	every := heartbeat
	if term {
		every = 500 * time.Millisecond
	}
	p.stopped.Add(1)
	go p.tick(every)
	return p
}

func (p *progress) tick(every time.Duration) {
	defer p.stopped.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.term {
				p.redraw()
			} else if len(p.running) > 0 {
				fmt.Fprintf(p.w, "%s running: %s\n", p.prefix(), p.status())
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) prefix() string {
	w := len(fmt.Sprint(p.total))
	el := time.Since(p.start).Round(time.Second)
	return fmt.Sprintf("[%*d/%d %s]", w, p.done, p.total, el)
}

// status describes the running scenarios in file order.
func (p *progress) status() string {
	var ids []int
	for i := range p.running {
		ids = append(ids, i)
	}
	slices.Sort(ids)
	var parts []string
	for _, i := range ids {
		parts = append(parts, p.running[i].String())
	}
	return strings.Join(parts, " | ")
}

func (p *progress) redraw() {
	line := p.prefix() + " " + p.status()
	if ws, err := unix.IoctlGetWinsize(int(p.w.(*os.File).Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 1 {
		if r := []rune(line); len(r) >= int(ws.Col) {
			line = string(r[:ws.Col-2]) + "…"
		}
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
}

// println prints a permanent line (over the status line on a terminal).
func (p *progress) println(s string) {
	if p.term {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, s)
	if p.term {
		p.redraw()
	}
}

func (p *progress) begin(i int, j job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &watch{name: fmt.Sprintf("%s seed %d", j.sc.Name, j.cfg.Seed),
		path: filepath.Join(j.cfg.Store, j.cfg.Scenario, "latest", reports.HistoryFile), active: map[string]bool{}}
	p.running[i] = w
	if !p.term {
		p.println(fmt.Sprintf("%s start %s", p.prefix(), w.name))
	}
}

func (p *progress) end(i int, o Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, i)
	if o.Status != NotRun {
		p.done++
	}
	p.println(p.prefix() + " " + resultLine(o))
}

// resultLine is one run's result, with the command that reproduces a
// failure.
func resultLine(o Outcome) string {
	name := fmt.Sprintf("%s seed %d", o.Scenario, o.Seed)
	var b strings.Builder
	switch o.Status {
	case Pass:
		fmt.Fprintf(&b, "PASS  %s: %s as expected (%.1fs, %d ops)", name, o.Got, o.WallSeconds, o.Ops)
	case Fail:
		fmt.Fprintf(&b, "FAIL  %s: expected %s, got %s", name, o.Expected, o.Got)
		for _, r := range o.Reasons {
			fmt.Fprintf(&b, "\n      %s", r)
		}
	case Errored:
		fmt.Fprintf(&b, "ERROR %s: %s", name, o.Error)
	case NotRun:
		fmt.Fprintf(&b, "STOP  %s: interrupted", name)
		return b.String()
	}
	if o.Status != Pass {
		fmt.Fprintf(&b, "\n      reproduce: %s", o.Command)
		if o.Dir != "" {
			fmt.Fprintf(&b, "\n      run dir:   %s", o.Dir)
		}
	}
	return b.String()
}

func (p *progress) close() {
	close(p.stop)
	p.stopped.Wait()
	if p.term {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// watch follows a running scenario's history.jsonl (flushed per record)
// to count completed operations and see which faults are active.
type watch struct {
	name   string
	path   string
	off    int64
	rest   []byte
	ops    int
	active map[string]bool
}

func (w *watch) poll() {
	f, err := os.Open(w.path)
	if err != nil {
		return // not created yet
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	for {
		n, err := f.ReadAt(buf, w.off)
		w.off += int64(n)
		w.rest = append(w.rest, buf[:n]...)
		if n == 0 || err != nil {
			break
		}
	}
	for {
		nl := bytes.IndexByte(w.rest, '\n')
		if nl < 0 {
			break
		}
		var r history.Record
		if json.Unmarshal(w.rest[:nl], &r) == nil {
			switch r.Type {
			case history.OK, history.Fail, history.Info:
				w.ops++
			case history.FaultStart:
				w.active[r.Fault+" on "+r.Target] = true
			case history.FaultStop:
				delete(w.active, r.Fault+" on "+r.Target)
			}
		}
		w.rest = w.rest[nl+1:]
	}
}

// String polls the history and says where the run is.
func (w *watch) String() string {
	w.poll()
	s := fmt.Sprintf("%s: %d ops", w.name, w.ops)
	if len(w.active) > 0 {
		var fs []string
		for f := range w.active {
			fs = append(fs, f)
		}
		slices.Sort(fs)
		s += ", " + strings.Join(fs, ", ")
	}
	return s
}
