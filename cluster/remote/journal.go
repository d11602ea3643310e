package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// UndoFile is the run directory's list of what the run did on its hosts
// and has not undone yet (see the package doc): one JSON object a line,
// appended and synced before the run goes on.
const UndoFile = "remote-undo.jsonl"

// What an Entry records.
const (
	DoDir = "dir" // a directory made on the host: removed
	DoPid = "pid" // a server started there: killed with its process group
	// DoCont is a server of the user's paused there (--servers): continued.
	DoCont = "cont"
)

// Entry is one act on a host, or (Undone) its undoing.
type Entry struct {
	Host string `json:"host"`
	Do   string `json:"do"`
	Path string `json:"path,omitempty"`
	Pid  int    `json:"pid,omitempty"`
	// Start is the process's start time (field 22 of /proc/PID/stat, in
	// clock ticks since the host's boot): a pid the host has since given
	// to another process is never signalled.
	Start  string    `json:"start,omitempty"`
	Node   string    `json:"node,omitempty"`
	Undone bool      `json:"undone,omitempty"`
	At     time.Time `json:"at"`
}

// key identifies the act an entry records or undoes.
func (e Entry) key() string {
	return e.Host + "\x00" + e.Do + "\x00" + e.Path + "\x00" + strconv.Itoa(e.Pid) + "\x00" + e.Start
}

// Journal appends entries to a run's undo list.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal opens (creating) dir's undo list for appending.
func OpenJournal(dir string) (*Journal, error) {
	f, err := os.OpenFile(filepath.Join(dir, UndoFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("undo list: %w", err)
	}
	return &Journal{f: f}, nil
}

// Record appends e and syncs it to disk: a SIGKILL right after still
// leaves it for heal.
func (j *Journal) Record(e Entry) error {
	e.At = time.Now().UTC()
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("undo list: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("undo list: closed")
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("undo list: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("undo list: %w", err)
	}
	return nil
}

// Close closes the list.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// Pending reads dir's undo list and returns what is not undone, in the
// order done. A last line cut off by a kill is ignored.
func Pending(dir string) ([]Entry, error) {
	f, err := os.Open(filepath.Join(dir, UndoFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("undo list: %w", err)
	}
	defer f.Close()
	// An act may be done and undone many times (a server of the user's
	// paused by every strike): it is pending while it was done more often
	// than undone, and listed once, where it was first done.
	var done []Entry
	open := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line cut off by a kill
		}
		k := e.key()
		switch {
		case e.Undone:
			open[k] = max(0, open[k]-1)
		case open[k] == 0 && !slices.ContainsFunc(done, func(d Entry) bool { return d.key() == k }):
			done = append(done, e)
			fallthrough
		default:
			open[k]++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("undo list: %w", err)
	}
	var out []Entry
	for _, e := range done {
		if open[e.key()] > 0 {
			out = append(out, e)
		}
	}
	return out, nil
}

// killScript kills the process group of pid if pid is still the process
// that started at start (continuing it first: a stopped process dies only
// once continued), and waits until it is gone. Exit 0 when gone.
func killScript(pid int, start string) string {
	return sameProcess(pid, start, "exit 0") + `kill -CONT -$p 2>/dev/null || kill -CONT $p 2>/dev/null
kill -KILL -$p 2>/dev/null || kill -KILL $p 2>/dev/null
i=0
while [ -e /proc/$p ] && ! grep -q '^State:[[:space:]]*Z' /proc/$p/status 2>/dev/null; do
  i=$((i+1)); [ $i -gt 200 ] && { echo "pid $p did not die" >&2; exit 1; }
  sleep 0.05
done
exit 0`
}

// removeScript removes a run's directory on a host; only one under a
// directory called locktest*, which is what runs make. A server whose
// pid file is there but whose start the coordinator did not live to
// record is killed first.
func removeScript(path string) string {
	return fmt.Sprintf(`d=%s
case "$d" in */locktest*/*) ;; *) echo "not a run directory of locktest: $d" >&2; exit 1;; esac
for f in "$d"/*/server.pid; do
  [ -f "$f" ] || continue
  read p st < "$f" || continue
  s=$(cat /proc/$p/stat 2>/dev/null) || continue
  set -- ${s##*")"}
  [ "${20}" = "$st" ] || continue
  kill -CONT -$p 2>/dev/null; kill -KILL -$p 2>/dev/null
done
rm -rf -- "$d"`, Quote(path))
}

// Heal undoes what the undo list of the run in dir says is left on its
// hosts, reached with opt (whose Hosts must name every host the list
// does), writes a line per act to out and records each undoing.
func Heal(ctx context.Context, dir string, opt Options, out io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, UndoFile)); err != nil {
		return fmt.Errorf("heal: %s has no undo list (%s): not a run with --nodes, or not a run directory", dir, UndoFile)
	}
	pending, err := Pending(dir)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		fmt.Fprintf(out, "heal: nothing left to undo in %s\n", dir)
		return nil
	}
	if err := ParseHosts(opt.Hosts); err != nil {
		return err
	}
	byName := map[string]bool{}
	for _, h := range opt.Hosts {
		_, name, _, _ := parseHost(h, "user")
		byName[name] = true
	}
	var missing []string
	for _, e := range pending {
		if !byName[e.Host] && !slices.Contains(missing, e.Host) {
			missing = append(missing, e.Host)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("heal: the run acted on %s too: give every host of the run in --nodes", strings.Join(missing, ", "))
	}
	hosts, err := Dial(ctx, opt)
	if err != nil {
		return err
	}
	defer func() {
		for _, h := range hosts {
			h.Close()
		}
	}()
	j, err := OpenJournal(dir)
	if err != nil {
		return err
	}
	defer j.Close()
	find := func(name string) *Host {
		for _, h := range hosts {
			if h.Name == name {
				return h
			}
		}
		return nil
	}
	// Servers first, then the firewall tables, then the directories the
	// servers ran in.
	slices.SortStableFunc(pending, func(a, b Entry) int {
		rank := map[string]int{DoCont: 0, DoPid: 0, DoTable: 1, DoDir: 2}
		return rank[a.Do] - rank[b.Do]
	})
	var errs []error
	for _, e := range pending {
		h := find(e.Host)
		var script, what string
		switch e.Do {
		case DoPid:
			script, what = killScript(e.Pid, e.Start), fmt.Sprintf("killed %s (pid %d) if still running", e.Node, e.Pid)
		case DoCont:
			script, what = contScript(e.Pid, e.Start), fmt.Sprintf("continued your server %s (pid %d) if still stopped", e.Node, e.Pid)
		case DoDir:
			script, what = removeScript(e.Path), "removed "+e.Path
		case DoTable:
			if !ourTable.MatchString(e.Path) {
				errs = append(errs, fmt.Errorf("heal: %q on %s is not a table of locktest's", e.Path, e.Host))
				continue
			}
			script, what = dropTable(h, e.Path), "deleted the firewall table inet "+e.Path
		default:
			errs = append(errs, fmt.Errorf("heal: unknown act %q on %s", e.Do, e.Host))
			continue
		}
		if _, err := h.Run(ctx, script, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		e.Undone = true
		if err := j.Record(e); err != nil {
			errs = append(errs, err)
		}
		fmt.Fprintf(out, "heal: %s: %s\n", e.Host, what)
	}
	return errors.Join(errs...)
}

// sameProcess is sh that sets p to pid and $1, $2, … to the fields of
// /proc/PID/stat after the command's name ($1 the state, ${20} the start
// time), and runs orElse when there is no such process or it is not the
// one that started at start: a pid the host gave to another process since
// is never signalled.
func sameProcess(pid int, start, orElse string) string {
	return fmt.Sprintf(`p=%d
s=$(cat /proc/$p/stat 2>/dev/null) || %s
set -- ${s##*")"}
[ "${20}" = %s ] || %s
`, pid, orElse, Quote(start), orElse)
}
