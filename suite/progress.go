package suite

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/live"
	"github.com/locktest/locktest/reports"
)

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
	failed  int // runs done that did not show what was expected
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
	if p.failed > 0 {
		return fmt.Sprintf("[%*d/%d %s, %d failed]", w, p.done, p.total, el, p.failed)
	}
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
	fmt.Fprintf(p.w, "\r\033[K%s", live.Fit(p.w, p.prefix()+" "+p.status()))
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
		follow: history.Follow(filepath.Join(j.cfg.Store, j.cfg.Scenario, "latest", reports.HistoryFile))}
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
	if o.Status == Fail || o.Status == Errored {
		p.failed++
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

// watch follows a running scenario's history as it grows.
type watch struct {
	name   string
	follow *history.Follower
	tally  live.Tally
}

// String polls the history and says where the run is.
func (w *watch) String() string {
	recs, _ := w.follow.Poll() // a read error shows as counts that stand still
	w.tally.Add(recs...)
	s := fmt.Sprintf("%s: %d ops", w.name, w.tally.Ops)
	if a := w.tally.Active(); len(a) > 0 {
		s += ", " + strings.Join(a, ", ")
	}
	return s
}
