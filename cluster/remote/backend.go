package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/locktest/locktest/cluster"
)

// BackendName is the --backend value of the SSH backend; --nodes selects
// it.
const BackendName = "ssh"

func init() {
	// Registered so that --backend ssh, config.json and the lists of
	// backends know it; a run makes it with New, as it needs the hosts.
	cluster.RegisterBackend(BackendName, func(string) (cluster.Backend, error) {
		return nil, errors.New("--backend ssh needs --nodes: the hosts to run the servers on")
	})
}

// Backend runs a cluster's servers on the hosts of --nodes, handing the
// nodes out in turn (node i on host i mod len(hosts)).
type Backend struct {
	// nodesDir is the cluster's local directory; on every host the run
	// has remoteDir instead, and paths under nodesDir in a node's
	// arguments, environment and files are rewritten to it.
	nodesDir  string
	remoteDir string
	hosts     []*Host
	journal   *Journal
	log       *slog.Logger

	mu       sync.Mutex
	assigned map[string]*Host
	next     int
	made     map[*Host]bool // remoteDir exists there
	shims    map[*Host]bool // the clock shim is in remoteDir there
	offsets  []Offset
	// firewalls are the run's tables on the hosts (--network firewall).
	firewalls map[*Host]*hostFirewall
	// guards continue the user's servers (AdoptServers).
	guards []guard
}

// New returns the backend of one run on hosts (Dial; the backend closes
// them) whose nodes live under nodesDir locally, recording its acts on
// the hosts in runDir's undo list, and measures the hosts' clocks. Nothing
// is changed on a host before a node starts there.
func New(ctx context.Context, hosts []*Host, nodesDir, runDir string, opt Options) (*Backend, error) {
	j, err := OpenJournal(runDir)
	if err != nil {
		closeAll(hosts)
		return nil, err
	}
	base := opt.Dir
	if base == "" {
		base = DefaultDir
	}
	if err := CheckDir(base); err != nil {
		closeAll(hosts)
		j.Close()
		return nil, err
	}
	b := &Backend{nodesDir: filepath.Clean(nodesDir), remoteDir: path.Join(base, filepath.Base(runDir)), hosts: hosts, journal: j,
		log: slog.With("backend", BackendName), assigned: map[string]*Host{}, made: map[*Host]bool{}, shims: map[*Host]bool{}}
	b.Measure(ctx, "start")
	return b, nil
}

// CheckDir validates --ssh-dir: an absolute path whose last part names
// locktest, as heal removes only run directories under such a name.
func CheckDir(dir string) error {
	if !path.IsAbs(dir) || !strings.Contains(path.Base(dir), "locktest") {
		return fmt.Errorf("--ssh-dir %s: give an absolute path whose last part names locktest (e.g. %s): heal removes only directories under such a name", dir, DefaultDir)
	}
	return nil
}

func closeAll(hosts []*Host) {
	for _, h := range hosts {
		h.Close()
	}
}

// Hosts returns the run's hosts in --nodes order.
func (b *Backend) Hosts() []*Host { return b.hosts }

// Measure measures every host's clock offset (see MeasureOffset) and
// keeps the results under when.
func (b *Backend) Measure(ctx context.Context, when string) []Offset {
	out := make([]Offset, len(b.hosts))
	var wg sync.WaitGroup
	for i, h := range b.hosts {
		wg.Go(func() { out[i] = MeasureOffset(ctx, h, when) })
	}
	wg.Wait()
	b.mu.Lock()
	b.offsets = append(b.offsets, out...)
	b.mu.Unlock()
	return out
}

// Offsets returns every offset measured so far.
func (b *Backend) Offsets() []Offset {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Offset(nil), b.offsets...)
}

func (b *Backend) Name() string { return BackendName }

// BindHost: every interface of the host, as in a container; which of the
// host's addresses the control host reaches is the host's business.
func (b *Backend) BindHost() string { return "0.0.0.0" }

// LinkHost is the control host's address as the first host sees it: the
// links listen there, and servers dial a peer's link there.
func (b *Backend) LinkHost(context.Context) (string, error) { return b.hosts[0].LocalIP, nil }

// Reserve hands the node called name its host (the same on every call).
func (b *Backend) Reserve(_ context.Context, name string) (string, error) {
	return b.hostOf(name).IP, nil
}

func (b *Backend) hostOf(name string) *Host {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.assigned[name]; ok {
		return h
	}
	h := b.hosts[b.next%len(b.hosts)]
	b.next++
	b.assigned[name] = h
	return h
}

// rewrite maps a local path under the nodes' directory to the host's.
func (b *Backend) rewrite(s string) string {
	return strings.ReplaceAll(s, b.nodesDir, b.remoteDir)
}

// Start copies the node's files to its host and starts its server there,
// or starts the killed instance prev again in the same directory, as a
// restarted machine keeps its disk.
func (b *Backend) Start(ctx context.Context, n *cluster.Node, prev cluster.Instance) (cluster.Instance, error) {
	if p, ok := prev.(*instance); ok {
		if err := p.start(ctx); err != nil {
			return nil, err
		}
		return p, nil
	}
	h, l, err := b.prepare(ctx, n, n.Spec())
	if err != nil {
		return nil, err
	}
	if n.Clock != nil {
		// The server's shim maps the host's copy of the offset file
		// (copied below with the node's directory): every offset the
		// faults set is written there too, in place, as the shim maps it.
		file := b.rewrite(n.Clock.Path())
		n.Clock.Mirror(func(d time.Duration) error {
			var word [8]byte
			binary.LittleEndian.PutUint64(word[:], uint64(d))
			ctx, cancel := opCtx()
			defer cancel()
			cmd := "dd of=" + Quote(file) + " bs=8 count=1 iflag=fullblock conv=notrunc status=none"
			if _, err := h.Run(ctx, cmd, bytes.NewReader(word[:])); err != nil {
				return fmt.Errorf("move the clock of %s: %w", n.Name, err)
			}
			return nil
		})
	}
	p := &instance{name: n.Name, host: h, journal: b.journal, launch: l, log: n.Spec().Log}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// RunSetup runs a node's setup program (initdb) on the host its server
// will run on, in the node's directory there, to its end
// (cluster.SetupRunner).
func (b *Backend) RunSetup(ctx context.Context, n *cluster.Node, setup cluster.Spec) error {
	h, l, err := b.prepare(ctx, n, setup)
	if err != nil {
		return err
	}
	l.out, l.setup = setupOut, true
	out, err := h.Run(ctx, l.setupScript(), nil)
	if setup.Log != nil {
		_, _ = io.WriteString(setup.Log, out)
	}
	var rerr *RemoteError
	if errors.As(err, &rerr) && rerr.Status == missingStatus {
		return &MissingBinaryError{Host: h.Name, Binary: l.bin}
	}
	return err
}

// prepare gives n its host, copies its directory there and returns how
// to launch spec there.
func (b *Backend) prepare(ctx context.Context, n *cluster.Node, spec cluster.Spec) (*Host, launch, error) {
	h := b.hostOf(n.Name)
	n.SetHost(h.IP)
	if err := b.makeRunDir(ctx, h); err != nil {
		return nil, launch{}, err
	}
	l := launch{dir: b.rewrite(spec.Dir), bin: spec.Path, runAs: spec.RunAs, privateIPC: spec.PrivateIPC, out: "server.out"}
	for _, kv := range spec.Env {
		if shim, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
			remoteShim, err := b.copyShim(ctx, h, shim)
			if err != nil {
				return nil, launch{}, err
			}
			kv = "LD_PRELOAD=" + remoteShim
		}
		l.env = append(l.env, b.rewrite(kv))
	}
	for _, a := range spec.Args {
		l.args = append(l.args, b.rewrite(a))
	}
	if err := b.copyDir(ctx, h, n.Dir, n.Name+".log"); err != nil {
		return nil, launch{}, err
	}
	return h, l, nil
}

// reaperScript starts its arguments but the first in a session of their
// own, their output appended to the file its first argument names, leaves
// their pid in launch.pid and waits for them to exit.
const reaperScript = `out=$1; shift; setsid "$@" </dev/null >>"$out" 2>&1 & echo $! > launch.pid; wait`

// launch is how a program is started on a host: in its node's directory,
// in a session of its own, its output appended to out there.
type launch struct {
	dir, bin string
	args     []string
	env      []string
	out      string
	// runAs and privateIPC are the Spec's: a root login starts the
	// program as that user and in an IPC namespace of its own, as a root
	// coordinator does here; any other login runs it as itself.
	runAs      string
	privateIPC bool
	// setup: a setup program, which gets the node's directory (its
	// user's) and whose exit the caller waits for.
	setup bool
}

// setupOut is a setup program's output on its host.
const setupOut = "setup.out"

// startScript starts a server and answers "PID START".
func (l launch) startScript() string { return l.script() + `echo "$p ${20}"` }

// setupScript runs a setup program to its end and answers its output, with
// its exit status.
func (l launch) setupScript() string {
	return l.script() + `wait $p
st=$?
rm -f server.pid
cat ` + setupOut + `
exit $st`
}

// script starts the program in the background, leaving its pid in $p and
// "PID START" in server.pid, which Close and heal kill before they remove
// the directory (a setup, too, still running when the coordinator died).
func (l launch) script() string {
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "bin=%s\n", Quote(l.bin))
	fmt.Fprintf(&cmd, "[ -x \"$bin\" ] || bin=$(command -v %s) || exit %d\n", Quote(path.Base(l.bin)), missingStatus)
	fmt.Fprintf(&cmd, "cd %s || exit 1\nset --\n", Quote(l.dir))
	if l.runAs != "" || l.privateIPC {
		cmd.WriteString("if [ \"$(id -u)\" -eq 0 ]; then\n")
		if l.runAs != "" {
			fmt.Fprintf(&cmd, "  uid=$(id -u %[1]s) && gid=$(id -g %[1]s) || { echo \"no user %[1]s on this host (its server's package makes it)\" >&2; exit 1; }\n", Quote(l.runAs))
			if l.setup {
				cmd.WriteString("  chown -R \"$uid:$gid\" . || exit 1\n")
			}
			cmd.WriteString("  set -- setpriv")
			for _, a := range cluster.SetprivArgs(`"$uid"`, `"$gid"`) {
				cmd.WriteString(" " + a)
			}
			cmd.WriteString(" --\n")
		}
		if l.privateIPC {
			fmt.Fprintf(&cmd, "  set -- unshare --ipc --mount --propagation private sh -c %s locktest-private-ipc mount \"$@\"\n", Quote(cluster.PrivateIPCScript))
		}
		cmd.WriteString("fi\n")
	}
	run := "setsid env"
	if !l.setup {
		// A server outlives this session: a shell of its own starts it
		// and waits for it, so that a killed server is reaped at once, as
		// here, not whenever the host's init gets to it (PostgreSQL will
		// not start while its last postmaster's pid names a process, a
		// zombie too). The server leads a session of its own still.
		run = "rm -f launch.pid\nsetsid sh -c " + Quote(reaperScript) + " locktest-reaper " + Quote(l.out) + " env"
	}
	cmd.WriteString(run)
	for _, kv := range l.env {
		cmd.WriteString(" " + Quote(kv))
	}
	cmd.WriteString(` "$@" "$bin"`)
	for _, a := range l.args {
		cmd.WriteString(" " + Quote(a))
	}
	if l.setup {
		fmt.Fprintf(&cmd, " </dev/null >>%s 2>&1 &\np=$!\n", Quote(l.out))
	} else {
		cmd.WriteString(` </dev/null >/dev/null 2>&1 &
i=0
while [ ! -s launch.pid ]; do i=$((i+1)); [ $i -gt 1000 ] && { echo "no pid from the server's launch" >&2; exit 1; }; sleep 0.01; done
read p < launch.pid
`)
	}
	fmt.Fprintf(&cmd, `s=$(cat /proc/$p/stat 2>/dev/null) || { echo "%s exited at once: see %s" >&2; exit 1; }
set -- ${s##*")"}
echo "$p ${20}" > server.pid
`, path.Base(l.bin), l.out)
	return cmd.String()
}

// copyShim copies the clock shim (built on the control host: the hosts
// must share its architecture and C library) into the run's directory on
// h, once, and returns its path there.
func (b *Backend) copyShim(ctx context.Context, h *Host, local string) (string, error) {
	to := path.Join(b.remoteDir, "clockshim.so")
	b.mu.Lock()
	done := b.shims[h]
	b.mu.Unlock()
	if done {
		return to, nil
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	// Into a file of its own, then renamed: hosts that share a file
	// system (an NFS home; the test's stand-ins) would otherwise truncate
	// the library under servers that have it mapped, which crash.
	tmp := fmt.Sprintf("%s.%s.tmp", to, Quote(h.Name))
	if _, err := h.Run(ctx, fmt.Sprintf("cat > %s && mv -f %s %s", Quote(tmp), Quote(tmp), Quote(to)), bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("copy the clock shim: %w", err)
	}
	b.mu.Lock()
	b.shims[h] = true
	b.mu.Unlock()
	return to, nil
}

// makeRunDir makes the run's directory on h, recording it first.
func (b *Backend) makeRunDir(ctx context.Context, h *Host) error {
	b.mu.Lock()
	made := b.made[h]
	b.mu.Unlock()
	if made {
		return nil
	}
	if err := b.journal.Record(Entry{Host: h.Name, Do: DoDir, Path: b.remoteDir}); err != nil {
		return err
	}
	if _, err := h.Run(ctx, "mkdir -p "+Quote(b.remoteDir), nil); err != nil {
		return fmt.Errorf("make the run's directory: %w", err)
	}
	b.mu.Lock()
	b.made[h] = true
	b.mu.Unlock()
	return nil
}

// copyDir copies the regular files under the local dir (configuration a
// deploy function wrote) to the host, paths and contents rewritten, all
// but skip (the node's log, which the coordinator keeps).
func (b *Backend) copyDir(ctx context.Context, h *Host, dir, skip string) error {
	if _, err := h.Run(ctx, "mkdir -p "+Quote(b.rewrite(dir)), nil); err != nil {
		return fmt.Errorf("copy to host: %w", err)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir {
				if _, err := h.Run(ctx, "mkdir -p "+Quote(b.rewrite(p)), nil); err != nil {
					return fmt.Errorf("copy to host: %w", err)
				}
			}
			return nil
		}
		if !d.Type().IsRegular() || (filepath.Dir(p) == dir && d.Name() == skip) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("copy to host: %w", err)
		}
		if utf8.Valid(data) {
			data = []byte(b.rewrite(string(data)))
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("copy to host: %w", err)
		}
		to := b.rewrite(p)
		cmd := fmt.Sprintf("cat > %s && chmod %o %s", Quote(to), info.Mode().Perm(), Quote(to))
		if _, err := h.Run(ctx, cmd, strings.NewReader(string(data))); err != nil {
			return fmt.Errorf("copy %s to host: %w", p, err)
		}
		return nil
	})
}

// Close deletes the run's firewall tables and removes the run's directory
// from every host it made them on (the servers were stopped before) and
// closes the connections.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.closeGuards()
	errs := []error{b.closeFirewalls(ctx)}
	for _, h := range b.hosts {
		b.mu.Lock()
		made := b.made[h]
		b.mu.Unlock()
		if !made {
			continue
		}
		if _, err := h.Run(ctx, removeScript(b.remoteDir), nil); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, b.journal.Record(Entry{Host: h.Name, Do: DoDir, Path: b.remoteDir, Undone: true}))
	}
	errs = append(errs, b.journal.Close())
	closeAll(b.hosts)
	return errors.Join(errs...)
}

// MissingBinaryError says a host lacks a server's program.
type MissingBinaryError struct{ Host, Binary string }

func (e *MissingBinaryError) Error() string {
	return fmt.Sprintf("host %s has no %s (neither at %s nor in PATH there): install it on the host; locktest installs nothing on hosts",
		e.Host, path.Base(e.Binary), e.Binary)
}

// instance is a node's server on a host: a process locktest started
// there in a session of its own (so its group is its pid), known by pid
// and start time; or, adopted, a server of the user's (AdoptServers),
// which it pauses and continues alone (its group may be the user's shell
// job) and never kills.
type instance struct {
	name    string
	host    *Host
	adopted bool
	journal *Journal
	launch  launch // how to start it (not an adopted server)
	log     io.Writer

	mu      sync.Mutex
	pid     int
	started string // /proc/PID/stat field 22
	paused  bool
	logSent int64 // bytes of server.out copied into log
	// seen and seenAt cache the last state asked: Exited and Stopped come
	// in pairs (the final heal asks both of every node), and Sentinel's
	// role follower asks every 200 ms; each ask is a session on the host.
	seen   string
	seenAt time.Time
}

// stateTTL is how long an asked state stands for the next ask. Every act
// of locktest's own on the server (start, signal, kill) forgets it.
const stateTTL = 250 * time.Millisecond

func (p *instance) forget() {
	p.mu.Lock()
	p.seenAt = time.Time{}
	p.mu.Unlock()
}

// missingStatus is the exit status the start script gives for a missing
// program.
const missingStatus = 127

// start starts the server on the host and records its pid.
func (p *instance) start(ctx context.Context) error {
	if p.adopted {
		return fmt.Errorf("%s is your server on host %s: locktest does not start it", p.name, p.host.Name)
	}
	out, err := p.host.Run(ctx, p.launch.startScript(), nil)
	var rerr *RemoteError
	if errors.As(err, &rerr) && rerr.Status == missingStatus {
		return &MissingBinaryError{Host: p.host.Name, Binary: p.launch.bin}
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return fmt.Errorf("start %s on host %s: the start script answered %q", p.name, p.host.Name, out)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return fmt.Errorf("start %s on host %s: pid %q: %w", p.name, p.host.Name, f[0], err)
	}
	p.mu.Lock()
	p.pid, p.started, p.paused, p.seenAt = pid, f[1], false, time.Time{}
	p.mu.Unlock()
	return p.journal.Record(Entry{Host: p.host.Name, Do: DoPid, Pid: pid, Start: f[1], Node: p.name})
}

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (p *instance) ids() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid, p.started
}

// signal sends sig to the server's process group (an adopted server's
// process), if it is still the process started.
func (p *instance) signal(sig string) error {
	defer p.forget()
	pid, start := p.ids()
	target := fmt.Sprint(-pid)
	if p.adopted {
		target = fmt.Sprint(pid)
	}
	ctx, cancel := opCtx()
	defer cancel()
	script := sameProcess(pid, start, `{ echo "not running" >&2; exit 1; }`) + fmt.Sprintf("kill -%s %s", sig, target)
	if _, err := p.host.Run(ctx, script, nil); err != nil {
		return fmt.Errorf("SIG%s %s: %w", sig, p.name, err)
	}
	return nil
}

// state is the server's process state letter (R, S, T, …), "" when it is
// gone (or a zombie, or the pid is another process's now).
func (p *instance) state() (string, error) {
	p.mu.Lock()
	if time.Since(p.seenAt) < stateTTL {
		defer p.mu.Unlock()
		return p.seen, nil
	}
	p.mu.Unlock()
	st, err := p.askState()
	if err == nil {
		p.mu.Lock()
		p.seen, p.seenAt = st, time.Now()
		p.mu.Unlock()
	}
	return st, err
}

func (p *instance) askState() (string, error) {
	pid, start := p.ids()
	ctx, cancel := opCtx()
	defer cancel()
	script := sameProcess(pid, start, "exit 0") + "[ \"$1\" != Z ] && echo \"$1\"\nexit 0"
	out, err := p.host.Run(ctx, script, nil)
	return strings.TrimSpace(out), err
}

// Pause stops the server's process group (SIGSTOP) on its host. An
// adopted server's pause is recorded first, for heal to continue it.
func (p *instance) Pause() error {
	if p.adopted {
		pid, start := p.ids()
		if err := p.journal.Record(Entry{Host: p.host.Name, Do: DoCont, Pid: pid, Start: start, Node: p.name}); err != nil {
			return err
		}
	}
	if err := p.signal("STOP"); err != nil {
		return err
	}
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
	return nil
}

// Resume continues it (SIGCONT).
func (p *instance) Resume() error {
	if err := p.signal("CONT"); err != nil {
		return err
	}
	p.mu.Lock()
	was := p.paused
	p.paused = false
	p.mu.Unlock()
	if p.adopted && was {
		pid, start := p.ids()
		return p.journal.Record(Entry{Host: p.host.Name, Do: DoCont, Pid: pid, Start: start, Node: p.name, Undone: true})
	}
	return nil
}

func (p *instance) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

func (p *instance) Stopped() bool {
	st, err := p.state()
	return err == nil && (st == "T" || st == "t")
}

// Exited reports whether the server is gone. Its exit status stays on
// the host (its parent there is not locktest): an exit is reported as
// such, with the tail of its output.
func (p *instance) Exited() (bool, error) {
	st, err := p.state()
	if err != nil {
		return false, err
	}
	if st != "" {
		return false, nil
	}
	return true, fmt.Errorf("%s exited on host %s", p.name, p.host.Name)
}

// Kill kills the server's process group (continued first) and waits until
// it is gone.
func (p *instance) Kill() error {
	if p.adopted {
		if err := p.Resume(); err != nil {
			return err
		}
		return fmt.Errorf("%s is your server on host %s: locktest does not kill it", p.name, p.host.Name)
	}
	defer p.forget()
	pid, start := p.ids()
	ctx, cancel := opCtx()
	defer cancel()
	_, err := p.host.Run(ctx, killScript(pid, start), nil)
	if err != nil {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
	p.syncLog(ctx)
	return p.journal.Record(Entry{Host: p.host.Name, Do: DoPid, Pid: pid, Start: start, Node: p.name, Undone: true})
}

// Stop asks the server to exit (SIGTERM to its group, continued first),
// kills it after grace, and copies its output into the node's log.
func (p *instance) Stop(grace time.Duration) error {
	if p.adopted {
		return p.Resume() // and leave it running
	}
	defer p.forget()
	pid, start := p.ids()
	ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
	defer cancel()
	script := sameProcess(pid, start, "exit 0") + fmt.Sprintf(`kill -CONT -$p 2>/dev/null; kill -TERM -$p 2>/dev/null
i=0
while [ -e /proc/$p ] && ! grep -q '^State:[[:space:]]*Z' /proc/$p/status 2>/dev/null; do
  i=$((i+1)); [ $i -gt %d ] && exit 0
  sleep 0.05
done`, int(grace/(50*time.Millisecond)))
	var errs []error
	if _, err := p.host.Run(ctx, script, nil); err != nil {
		errs = append(errs, fmt.Errorf("stop %s: %w", p.name, err))
	}
	if err := p.Kill(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// syncLog appends what the server wrote since the last call to the node's
// log.
func (p *instance) syncLog(ctx context.Context) {
	if p.log == nil {
		return
	}
	p.mu.Lock()
	from := p.logSent
	p.mu.Unlock()
	out, err := p.host.Run(ctx, fmt.Sprintf("tail -c +%d %s 2>/dev/null; exit 0", from+1, Quote(path.Join(p.launch.dir, p.launch.out))), nil)
	if err != nil || out == "" {
		return
	}
	_, _ = io.WriteString(p.log, out)
	p.mu.Lock()
	p.logSent += int64(len(out))
	p.mu.Unlock()
}

// ProcFiles reads the server's /proc on its host in one session, for the
// samples (cluster.StatReader).
func (p *instance) ProcFiles() (int, cluster.ProcFiles, error) {
	pid, start := p.ids()
	ctx, cancel := opCtx()
	defer cancel()
	script := sameProcess(pid, start, fmt.Sprintf(`{ echo "%s is not running" >&2; exit 1; }`, p.name)) + `cat /proc/$p/status
echo @@fd
for f in /proc/$p/fd/*; do
  [ -L "$f" ] || continue
  readlink "$f" || echo
done
echo @@tcp
cat /proc/$p/net/tcp 2>/dev/null
echo @@tcp
cat /proc/$p/net/tcp6 2>/dev/null
exit 0`
	out, err := p.host.Run(ctx, script, nil)
	if err != nil {
		return pid, cluster.ProcFiles{}, fmt.Errorf("/proc of %s on host %s: %w", p.name, p.host.Name, err)
	}
	parts := strings.Split(out, "\n@@tcp\n")
	status, fds, _ := strings.Cut(parts[0], "\n@@fd\n")
	files := cluster.ProcFiles{Status: status, TCP: parts[1:]}
	for _, l := range strings.Split(strings.TrimSuffix(fds, "\n"), "\n") {
		if fds != "" {
			files.FDs = append(files.FDs, l)
		}
	}
	return pid, files, nil
}

// HostPid: the server is not a process of this host. A fault that reaches
// into a server's sockets by pid refuses, as it must.
func (p *instance) HostPid() (int, error) {
	pid, _ := p.ids()
	return 0, fmt.Errorf("%s runs on host %s (pid %d there), not on this one", p.name, p.host.Name, pid)
}

// CheckPrograms asks every host for the programs at paths (the control
// host's paths of the servers a run will start), by that path or by name
// in the host's PATH, and says which host lacks which: before a run
// starts anything, since any host may get any node.
func CheckPrograms(ctx context.Context, hosts []*Host, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	var script strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&script, "[ -x %s ] || command -v %s >/dev/null 2>&1 || echo %s\n", Quote(p), Quote(path.Base(p)), Quote(p))
	}
	missing := make([]string, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			var out string
			out, errs[i] = h.Run(ctx, script.String(), nil)
			missing[i], _, _ = strings.Cut(strings.TrimSpace(out), "\n")
		})
	}
	wg.Wait()
	for i, h := range hosts {
		switch {
		case errs[i] != nil:
			return errs[i]
		case missing[i] != "":
			return &MissingBinaryError{Host: h.Name, Binary: missing[i]}
		}
	}
	return nil
}
