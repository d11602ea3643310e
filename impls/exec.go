package impls

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/lock"
	"github.com/locktest/locktest/protocol"
)

// ExecName is the design that drives a lock client written in any
// language: a program speaking the JSON-lines protocol (docs/protocol.md).
const ExecName = "exec"

func init() {
	Register(Design{
		Name:        ExecName,
		Description: "your own lock client, any language: --exec-cmd runs it per worker, JSON lines on stdin/stdout (docs/protocol.md)",
		Renews:      true,
		// Whatever servers the program talks to, it is given their
		// addresses: with --servers, any number of them.
		PlainNodes: true,
		Deploy:     func(context.Context, *cluster.Cluster, lock.Config) (Deployment, error) { return Deployment{}, nil },
		New:        newExec,
	})
}

// Timing of the protocol.
const (
	// replyMargin is how late after a request's timeout_ms a reply may
	// come before the program counts as hung: slack for a loaded machine.
	replyMargin = 2 * time.Second
	// initTimeout bounds start-up plus the init reply (a JVM starts slowly).
	initTimeout = 8 * time.Second
	// stallGap: a gap this long between two ticks of the reply wait means
	// the worker's process group was stopped (a pause fault), and the
	// program with it. That time is not charged to the program.
	stallGap  = 250 * time.Millisecond
	waitTick  = 50 * time.Millisecond
	closeWait = 2 * time.Second
	maxLine   = 1 << 20
)

// InitBound is the longest a program may take to start and answer init
// before its worker reports it broken.
const InitBound = initTimeout + replyMargin

// ExecDesign returns the exec design of one run: it starts the servers of
// the registered design named servers ("none": no servers) and runs the
// program cmd in each worker. Its errors are the user's to fix.
func ExecDesign(cmd, servers string) (Design, error) {
	argv, err := ExecArgs(cmd)
	if err != nil {
		return Design{}, err
	}
	exec, err := Lookup(ExecName)
	if err != nil {
		return Design{}, err
	}
	d := exec
	d.Binaries = map[string]string{argv[0]: ""}
	switch servers {
	case "":
		return Design{}, errors.New("--impl exec needs --exec-servers: the registered design whose servers to start (e.g. redis-single), or none; or --servers: the addresses of servers you run")
	case "none":
		return d, nil
	case ExecName:
		return Design{}, fmt.Errorf("--exec-servers %s: name a design that starts servers (e.g. redis-single), or none", servers)
	}
	s, err := Lookup(servers)
	if err != nil {
		return Design{}, fmt.Errorf("--exec-servers: %w", err)
	}
	// The servers and whatever else describes them come from s; the
	// client is the program.
	bins := d.Binaries
	d = s
	// The checkpoints, too, are the client's: the program announces its
	// own (--exec-checkpoints), never those of s's Go client.
	d.Name, d.Description, d.Fenced, d.Renews, d.New = exec.Name, exec.Description, false, exec.Renews, exec.New
	d.Checkpoints = nil
	for b, p := range s.Binaries {
		bins[b] = p
	}
	d.Binaries = bins
	return d, nil
}

// ServerBinaries are the binaries of d's servers: those a package
// provides. The one without is the user's lock program (ExecDesign), a
// client beside its worker, which nothing that acts on servers concerns.
func ServerBinaries(d Design) []string {
	var bins []string
	for b, pkg := range d.Binaries {
		if pkg != "" {
			bins = append(bins, b)
		}
	}
	return bins
}

// ExecArgs splits a command line into words as a shell would for a simple
// command: blanks separate words, single quotes keep everything, double
// quotes and backslashes escape. No shell runs, so the program is the
// worker's own child and dies with it.
func ExecArgs(cmd string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
		quote rune // ' or " while inside quotes
	)
	rs := []rune(cmd)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\' && (quote == 0 || (i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]))):
			if i+1 == len(rs) {
				return nil, fmt.Errorf("--exec-cmd %q: ends with a lone backslash", cmd)
			}
			i++
			cur.WriteRune(rs[i])
			in = true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("--exec-cmd %q: unbalanced %c quote", cmd, quote)
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("--exec-cmd is empty: give the command that runs your lock client, e.g. 'python3 mylock.py'")
	}
	return words, nil
}

// execLock is a lock.Lock whose client is the user's program, a child of the
// worker in the worker's process group: a pause fault stops both, a kill
// kills both, exactly as a GC pause or a crash of the user's runtime
// would. Requests go one at a time; the workload never overlaps them.
type execLock struct {
	cfg   lock.Config
	name  string // c<N>: the worker, as every message names it
	proc  *cluster.Process
	stdin *os.File
	lines chan outLine // the program's stdout, closed at EOF
	next  int64
	err   error // set once the program is broken; every call returns it
	cmds  atomic.Int64
}

// outLine is one line of the program's stdout.
type outLine struct {
	n    int
	text []byte
	err  error
}

func newExec(cfg lock.Config) (lock.Lock, error) {
	name := fmt.Sprintf("c%d", cfg.Client)
	argv, err := ExecArgs(cfg.ExecCmd)
	if err != nil {
		return nil, lock.Broken(fmt.Errorf("%s: %w", name, err))
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s: pipe: %w", name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("%s: pipe: %w", name, err)
	}
	env := []string{
		fmt.Sprintf("LOCKTEST_CLIENT=%d", cfg.Client),
		"LOCKTEST_NODES=" + strings.Join(cfg.Nodes, ","),
		fmt.Sprintf("LOCKTEST_TTL_MS=%d", cfg.TTL.Milliseconds()),
	}
	// The program's stderr is the worker's: its debug lines land in the
	// worker log beside the worker's own.
	proc, err := cluster.Start(cluster.Spec{Name: name + " lock program", Path: argv[0], Args: argv[1:], Dir: cfg.ExecDir,
		Env: env, Stdin: inR, Stdout: outW, Log: os.Stderr, SameGroup: true})
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, lock.Broken(fmt.Errorf("%s: lock program %q: %w", name, cfg.ExecCmd, err))
	}
	l := &execLock{cfg: cfg, name: name, proc: proc, stdin: inW, lines: make(chan outLine, 16)}
	go l.read(outR)
	setup := &protocol.Setup{Client: cfg.Client, Nodes: cfg.Nodes, AcquireTimeoutMs: cfg.AcquireTimeout.Milliseconds(),
		IOTimeoutMs: cfg.IOTimeout.Milliseconds(), RetryMinMs: cfg.RetryMin.Milliseconds(),
		RetryJitterMs: cfg.RetryJitter.Milliseconds(), Seed: cfg.Seed}
	rep, err := l.call(protocol.Request{Type: protocol.Init, TTLMs: cfg.TTL.Milliseconds(), Setup: setup}, initTimeout)
	if err == nil && rep.Type != protocol.OK {
		err = l.broke(nil, 0, fmt.Errorf("init answered %s: %s", rep.Type, rep.Error))
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// read feeds the program's stdout lines to the waiting call.
func (l *execLock) read(out *os.File) {
	defer close(l.lines)
	defer out.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 4096), maxLine)
	n := 0
	for sc.Scan() {
		n++
		l.lines <- outLine{n: n, text: append([]byte(nil), sc.Bytes()...)}
	}
	if err := sc.Err(); err != nil {
		l.lines <- outLine{n: n + 1, err: err}
	}
}

// call sends one request and waits for its reply: timeout is the request's
// deadline, plus replyMargin before the program counts as hung. Time the
// worker spent stopped is not counted. Anything but a well-formed reply to
// this very request breaks the lock for good.
func (l *execLock) call(req protocol.Request, timeout time.Duration) (protocol.Reply, error) {
	if l.err != nil {
		return protocol.Reply{}, l.err
	}
	req.ID = l.next
	l.next++
	req.TimeoutMs = timeout.Milliseconds()
	line, err := json.Marshal(req)
	if err != nil {
		return protocol.Reply{}, fmt.Errorf("%s: encode request: %w", l.name, err)
	}
	if _, err := l.stdin.Write(append(line, '\n')); err != nil {
		return protocol.Reply{}, l.broke(line, 0, fmt.Errorf("cannot send the request (%v): %s", err, l.exitStatus()))
	}
	tick := time.NewTicker(waitTick)
	defer tick.Stop()
	budget, last := timeout+replyMargin, time.Now()
	for {
		select {
		case ol, ok := <-l.lines:
			switch {
			case !ok:
				return protocol.Reply{}, l.broke(line, 0, fmt.Errorf("closed its stdout before replying: %s", l.exitStatus()))
			case ol.err != nil:
				return protocol.Reply{}, l.broke(line, ol.n, ol.err)
			}
			rep, err := protocol.ParseReply(ol.text)
			if err != nil {
				return protocol.Reply{}, l.broke(line, ol.n, fmt.Errorf("%v: %s", err, quote(ol.text)))
			}
			if rep.InReplyTo != req.ID {
				return protocol.Reply{}, l.broke(line, ol.n, fmt.Errorf("answers request %d, which it was not asked (waiting for %d): %s",
					rep.InReplyTo, req.ID, quote(ol.text)))
			}
			if rep.Type == protocol.Checkpoint {
				if err := l.checkpoint(req, rep.Point); err != nil {
					return protocol.Reply{}, l.broke(line, ol.n, err)
				}
				// The time held at the checkpoint is not the program's.
				last = time.Now()
				continue
			}
			l.cmds.Add(rep.Cmds)
			return rep, nil
		case <-tick.C:
			now := time.Now()
			step := now.Sub(last)
			last = now
			if step > stallGap {
				step = waitTick
			}
			if budget -= step; budget <= 0 {
				return protocol.Reply{}, l.broke(line, 0, fmt.Errorf("no reply within timeout_ms + %s: considered hung", replyMargin))
			}
		}
	}
}

// checkpoint passes the program's announcement of point, made while it
// handles req, to the worker (lock.Config.Reach), which may hold it there
// for a fault, and then lets the program go on. The program waits for that
// continue line, so it stays between the round trips it announced the
// point between however long the worker is held, whether or not a stop of
// the worker's process group reaches it.
func (l *execLock) checkpoint(req protocol.Request, point string) error {
	switch {
	case req.Type != protocol.Acquire && req.Type != protocol.Release:
		return fmt.Errorf("announced checkpoint %q while handling %s: checkpoints go inside acquire and release only", point, req.Type)
	case !slices.Contains(l.cfg.ExecCheckpoints, point):
		listed := "it lists none"
		if len(l.cfg.ExecCheckpoints) > 0 {
			listed = "it lists " + strings.Join(l.cfg.ExecCheckpoints, ", ")
		}
		return fmt.Errorf("announced checkpoint %q, which --exec-checkpoints does not list (%s): add it, so that faults and searches know of it",
			point, listed)
	}
	l.cfg.Reach(point)
	ack, err := json.Marshal(protocol.Ack{InReplyTo: req.ID, Type: protocol.Continue})
	if err != nil {
		return fmt.Errorf("encode continue: %w", err)
	}
	if _, err := l.stdin.Write(append(ack, '\n')); err != nil {
		return fmt.Errorf("cannot send continue after checkpoint %q (%v): %s", point, err, l.exitStatus())
	}
	return nil
}

// broke records that the program can no longer be trusted: it says so on
// the worker's stderr, naming the worker, the offending stdout line and the
// request, kills the program, and returns the error every later call gets.
func (l *execLock) broke(req []byte, n int, why error) error {
	where := ""
	if n > 0 {
		where = fmt.Sprintf("stdout line %d: ", n)
	}
	msg := fmt.Sprintf("%s: lock program '%s': %s%v", l.name, l.cfg.ExecCmd, where, why)
	if req != nil {
		msg += fmt.Sprintf(" (request: %s)", req)
	}
	l.err = lock.Broken(errors.New(msg))
	slog.Error("lock program broken; its ops from here on are unknown", "client", l.cfg.Client, "err", msg)
	_ = l.proc.Kill()
	return l.err
}

// exitStatus describes how the program ended, waiting briefly for it.
func (l *execLock) exitStatus() string {
	select {
	case <-l.proc.Done():
	case <-time.After(time.Second):
		return "still running"
	}
	if _, err := l.proc.Exited(); err != nil {
		return "it exited: " + err.Error()
	}
	return "it exited with status 0"
}

// quote shows an offending line as it was, cut to a readable length, and
// escaped only if it holds control characters or invalid UTF-8.
func quote(b []byte) string {
	const max = 200
	cut := ""
	if len(b) > max {
		b, cut = b[:max], "…"
	}
	s := string(b)
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		s = strconv.Quote(s)
	}
	return s + cut
}

func (l *execLock) Acquire(ctx context.Context, key string) (lock.Grant, error) {
	timeout := l.cfg.AcquireTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	start := l.cfg.Clock.Now()
	rep, err := l.call(protocol.Request{Type: protocol.Acquire, Key: key, TTLMs: l.cfg.TTL.Milliseconds()}, timeout)
	if err != nil {
		return lock.Grant{}, err
	}
	switch rep.Type {
	case protocol.OK:
		return lock.Grant{Owner: rep.Owner, Token: rep.Token, Validity: l.validity(rep, start)}, nil
	case protocol.Fail:
		return lock.Grant{}, fmt.Errorf("%w: %s", lock.ErrNotAcquired, rep.Error)
	default:
		return lock.Grant{}, fmt.Errorf("acquire outcome unknown: %s", rep.Error)
	}
}

func (l *execLock) Release(_ context.Context, key string, g lock.Grant) error {
	rep, err := l.call(protocol.Request{Type: protocol.Release, Key: key, Owner: g.Owner, Token: g.Token}, l.cfg.IOTimeout)
	if err != nil {
		return err
	}
	switch rep.Type {
	case protocol.OK:
		return nil
	case protocol.Fail:
		return fmt.Errorf("%w: %s", lock.ErrNotHeld, rep.Error)
	default:
		return fmt.Errorf("release outcome unknown: %s", rep.Error)
	}
}

// Renew asks the program to extend the lease. A program without renewal
// answers fail: not renewed.
func (l *execLock) Renew(_ context.Context, key string, g lock.Grant) (lock.Grant, error) {
	start := l.cfg.Clock.Now()
	rep, err := l.call(protocol.Request{Type: protocol.Renew, Key: key, Owner: g.Owner, Token: g.Token,
		TTLMs: l.cfg.TTL.Milliseconds()}, l.cfg.IOTimeout)
	if err != nil {
		return g, err
	}
	switch rep.Type {
	case protocol.OK:
		g.Validity = l.validity(rep, start)
		return g, nil
	case protocol.Fail:
		return g, lock.Definite(fmt.Errorf("not renewed: %s", rep.Error))
	default:
		return g, fmt.Errorf("renew outcome unknown: %s", rep.Error)
	}
}

func (l *execLock) validity(rep protocol.Reply, start time.Time) time.Duration {
	if rep.ValidityMs > 0 {
		return time.Duration(rep.ValidityMs) * time.Millisecond
	}
	return l.cfg.TTL - l.cfg.Clock.Now().Sub(start)
}

// Commands sums the cmds the program reported.
func (l *execLock) Commands() int64 { return l.cmds.Load() }

// Close closes the program's stdin, its cue to exit, and kills it if it
// does not.
func (l *execLock) Close() error {
	l.stdin.Close()
	select {
	case <-l.proc.Done():
		return nil
	case <-time.After(closeWait):
		slog.Warn("lock program did not exit on stdin EOF; killing it", "client", l.cfg.Client)
		return l.proc.Kill()
	}
}
