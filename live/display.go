package live

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktest/locktest/clock"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/reports"
)

// Mode is how a display shows progress.
type Mode string

const (
	// Auto is TTY when the output is a terminal, else Plain.
	Auto Mode = "auto"
	// TTY redraws one status line in place.
	TTY Mode = "tty"
	// Plain prints a line per phase and a heartbeat line every few
	// seconds: for CI logs and files, which cannot redraw.
	Plain Mode = "plain"
	// None shows nothing.
	None Mode = "none"
)

// Modes are the values --progress takes.
var Modes = []Mode{Auto, TTY, Plain, None}

// String is the mode as --progress spells it.
func (m *Mode) String() string { return string(*m) }

// Set reads --progress, so that *Mode is a flag.Value.
func (m *Mode) Set(s string) error {
	if !slices.Contains(Modes, Mode(s)) {
		return fmt.Errorf("want one of %v", Modes)
	}
	*m = Mode(s)
	return nil
}

// Resolve turns Auto into TTY or Plain for output w.
func (m Mode) Resolve(w io.Writer) Mode {
	if m != Auto {
		return m
	}
	if IsTerminal(w) {
		return TTY
	}
	return Plain
}

// IsTerminal reports whether w is a terminal that can redraw a line.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Fit cuts line to the width of terminal w, so that a redrawn line never
// wraps (a wrapped line cannot be erased with \r).
func Fit(w io.Writer, line string) string {
	f, ok := w.(*os.File)
	if !ok {
		return line
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col <= 1 {
		return line
	}
	if r := []rune(line); len(r) >= int(ws.Col) {
		return string(r[:ws.Col-2]) + "…"
	}
	return line
}

// Plain mode's heartbeat: often enough that a CI log shows the run alive,
// seldom enough that a 15 s run prints a handful of lines.
const (
	plainEvery = 5 * time.Second
	ttyEvery   = 500 * time.Millisecond
)

// Display shows one run's progress on w (stderr): the runner tells it each
// phase, and it follows the run's history for the rest. Lines others write
// to w while it runs (warnings, logs) must go through Write, which clears
// the status line first, so that nothing is garbled.
type Display struct {
	w    io.Writer
	term bool

	mu     sync.Mutex
	phase  Phase
	dir    string // the run's, once known
	follow *history.Follower
	tally  Tally
	shown  bool // a status line is on the terminal
	closed bool

	stop    chan struct{}
	stopped sync.WaitGroup
}

// NewDisplay starts a display in mode TTY or Plain (resolve Auto first).
func NewDisplay(w io.Writer, mode Mode) *Display {
	if mode == TTY {
		return newDisplay(w, mode, ttyEvery)
	}
	return newDisplay(w, mode, plainEvery)
}

// newDisplay starts a display that refreshes every so often.
func newDisplay(w io.Writer, mode Mode, every time.Duration) *Display {
	d := &Display{w: w, term: mode == TTY, stop: make(chan struct{})}
	d.stopped.Add(1)
	go d.tick(every)
	return d
}

func (d *Display) tick(every time.Duration) {
	defer d.stopped.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.mu.Lock()
			if d.phase != "" {
				d.show()
			}
			d.mu.Unlock()
		}
	}
}

// SetGrace tells the display the run's TTL, which its count of the
// strikes that hit allows after a heal (Tally.Grace), so that it counts
// as the run's samples do.
func (d *Display) SetGrace(ttl time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tally.Grace = ttl
}

// Phase is the runner's observer: the run entered p; dir is its directory.
func (d *Display) Phase(p Phase, dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.follow == nil && dir != "" {
		d.dir = dir
		d.follow = history.Follow(filepath.Join(dir, reports.HistoryFile))
	}
	d.phase = p
	d.show()
}

// show prints the status: redrawn in place on a terminal, a new line
// otherwise. Plain lines begin once the clients run: a run refused for bad
// input while its servers start (a --fault-target they lack) then prints
// its one line and nothing else. d.mu is held.
func (d *Display) show() {
	if d.closed || (!d.term && d.phase == Starting) {
		return
	}
	if d.follow != nil {
		recs, _ := d.follow.Poll() // a read error shows as counts that stand still
		d.tally.Add(recs...)
	}
	line := d.tally.Line(d.phase, clock.Mono())
	// The processes' memory while the clients run: a soak's leak shows
	// as it grows, not only in the report at the end.
	if d.dir != "" && (d.phase == Running || d.phase == Healing) {
		if s, ok := latestSample(filepath.Join(d.dir, reports.SamplesFile)); ok {
			line += "; memory " + MemoryText(s)
		}
	}
	if d.term {
		fmt.Fprintf(d.w, "\r\033[K%s", Fit(d.w, line))
		d.shown = true
		return
	}
	fmt.Fprintf(d.w, "locktest run: %s\n", line)
}

// Write writes p (whole lines) to the display's output above the status
// line.
func (d *Display) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	n, err := d.w.Write(p)
	if d.term && d.phase != "" && !d.closed {
		d.show()
	}
	return n, err
}

// clear erases the status line. d.mu is held.
func (d *Display) clear() {
	if d.shown {
		fmt.Fprint(d.w, "\r\033[K")
		d.shown = false
	}
}

// Close stops the display and erases its status line, so that what follows
// (the summary, an error) starts on a clean line.
func (d *Display) Close() {
	close(d.stop)
	d.stopped.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	d.closed = true
}
