package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Why a lab, and where it lives. A proxy decides what a partition does to
// a connection; the kernel's firewall does what a network does: a dropped
// packet is retransmitted, and a connection outlives a partition shorter
// than its own timeouts. So with --network netns every server and every
// client worker runs in a network namespace of its own, with its own
// address on a bridge, and a link's effects are firewall rules in the
// namespace of its server end (see kernelLink).
//
// Nothing of it is on the host. The coordinator itself re-executes in a
// new network namespace (RerunInLab), which holds the bridge and the
// host-side ends of the veth pairs; it reaches every server through the
// bridge, as it reaches loopback otherwise. Each endpoint's namespace is
// held only by a file descriptor of the coordinator and by the processes
// started in it (no bind mount under /run/netns), so when the coordinator
// dies, however it dies, the kernel frees the namespaces and, with them,
// the veths, the bridge and every rule: its children die by their
// parent-death signal and the run's cgroup. The host's interfaces, routes
// and firewall are never touched, and the only addresses are the lab's.
//
// Making namespaces, veths and rules needs CAP_NET_ADMIN and
// CAP_SYS_ADMIN: root. Elsewhere a run uses the proxy (LabSupport).

// LabEnv marks a coordinator that runs inside its lab's namespace.
const LabEnv = "LOCKTEST_IN_LAB"

// InLab reports whether this process is a coordinator RerunInLab started.
func InLab() bool { return os.Getenv(LabEnv) == "1" }

// StartLab readies the namespace RerunInLab started this process in: its
// loopback is down until then, and the runs of a suite that need no lab
// use it as any run uses the host's.
func StartLab() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("lab: loopback: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lab: loopback up: %w", err)
	}
	return nil
}

// LabSupport says why a run cannot have a lab here, or nil. Root is not
// enough in a container, which may lack the capabilities. (It does not
// try an unshare on a thread of its own: a thread left in another
// namespace, even one about to end, can be where the runtime clones its
// next thread from, and a server a proxied run started from it listened
// where its coordinator could not reach it.)
func LabSupport() error {
	labSupport.once.Do(func() { labSupport.err = probeLab() })
	return labSupport.err
}

var labSupport struct {
	once sync.Once
	err  error
}

func probeLab() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces, veths and firewall rules need root")
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("read own capabilities: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return fmt.Errorf("read own capabilities: %w", err)
			}
			if caps&(1<<unix.CAP_SYS_ADMIN) == 0 || caps&(1<<unix.CAP_NET_ADMIN) == 0 {
				return errors.New("network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN, which this root lacks (a container?)")
			}
		}
	}
	return nil
}

// RerunInLab runs this program again with args in a new network namespace
// and returns its exit code. The child dies with this process (parent-death
// signal) and is born into the run's cgroup; a SIGINT or SIGTERM sent to
// this process is passed on.
func RerunInLab(args []string) (int, error) {
	if err := LabSupport(); err != nil {
		return 0, fmt.Errorf("--network netns: %w: run as root or use --network proxy", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), LabEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	intoRunCgroup(cmd.SysProcAttr)
	sigs := make(chan os.Signal, 1)
	// The child has its own handlers; this process only waits for it.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := startLocked(cmd); err != nil {
		return 0, fmt.Errorf("start the run in its own network namespace: %w", err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				// A Ctrl-C reaches the child from the terminal too; a
				// second interrupt changes nothing there.
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	return 0, err
}

// labSubnets hands each lab of this process (a suite runs several at
// once) its own /24 of 10.73.0.0/16 and its own bridge name.
var labSubnets struct {
	sync.Mutex
	used [256]bool
}

// Lab is one run's network: a bridge in the coordinator's namespace and
// an Endpoint per server and client.
type Lab struct {
	subnet byte
	bridge *netlink.Bridge

	mu   sync.Mutex
	eps  map[string]*Endpoint
	next byte // last host number given; the bridge has .1
}

// Endpoint is a server's or a client's network namespace with its one
// address on the lab's bridge. Processes started with Spec.Net set are
// born in it; a kernel link's rules live in its firewall.
type Endpoint struct {
	Name string
	IP   net.IP
	// Client: a client worker's, not a server's.
	Client bool
	ns     netns.NsHandle
	veth   string
	fwOnce sync.Once
	fw     *firewall
}

func (e *Endpoint) handle() netns.NsHandle {
	if e == nil {
		return netns.None()
	}
	return e.ns
}

// NewLab makes a lab in this coordinator's own network namespace, which
// must be one RerunInLab made: the bridge and its address stay off the
// host.
func NewLab() (*Lab, error) {
	if !InLab() {
		return nil, errors.New("--network netns: this process does not run in a network namespace of its own (locktest run and suite run start one; see docs/network.md)")
	}
	labSubnets.Lock()
	subnet := byte(0)
	for i := 1; i < 255; i++ {
		if !labSubnets.used[i] {
			labSubnets.used[i], subnet = true, byte(i)
			break
		}
	}
	labSubnets.Unlock()
	if subnet == 0 {
		return nil, errors.New("lab: this process already runs 254 labs")
	}
	l := &Lab{subnet: subnet, eps: map[string]*Endpoint{}, next: 1}
	l.bridge = &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("ltbr%d", subnet)}}
	if err := netlink.LinkAdd(l.bridge); err != nil {
		l.release()
		return nil, fmt.Errorf("lab: bridge: %w", err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: l.ip(1), Mask: net.CIDRMask(24, 32)}}
	if err := errors.Join(netlink.AddrAdd(l.bridge, addr), netlink.LinkSetUp(l.bridge)); err != nil {
		l.Close()
		return nil, fmt.Errorf("lab: bridge address: %w", err)
	}
	return l, nil
}

func (l *Lab) ip(host byte) net.IP { return net.IPv4(10, 73, l.subnet, host).To4() }

// Host is the coordinator's address on the lab's bridge.
func (l *Lab) Host() string { return l.ip(1).String() }

// Endpoint returns the endpoint called name, making its namespace, veth
// pair and address the first time.
func (l *Lab) Endpoint(name string, client bool) (*Endpoint, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.eps[name]; ok {
		return e, nil
	}
	if l.next >= 254 {
		return nil, fmt.Errorf("lab: no address left for %s", name)
	}
	l.next++
	e := &Endpoint{Name: name, IP: l.ip(l.next), Client: client, veth: fmt.Sprintf("lt%de%d", l.subnet, l.next)}
	ns, err := newNamespace()
	if err != nil {
		return nil, fmt.Errorf("lab: namespace of %s: %w", name, err)
	}
	e.ns = ns
	if err := l.wire(e); err != nil {
		e.close()
		return nil, fmt.Errorf("lab: wire %s: %w", name, err)
	}
	l.eps[name] = e
	return e, nil
}

// wire joins e to the bridge: a veth pair whose inner end, eth0, is moved
// into e's namespace with e's address.
func (l *Lab) wire(e *Endpoint) error {
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: e.veth, MasterIndex: l.bridge.Index},
		PeerName: "eth0", PeerNamespace: netlink.NsFd(int(e.ns))}
	if err := netlink.LinkAdd(veth); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return err
	}
	h, err := netlink.NewHandleAt(e.ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: e.IP, Mask: net.CIDRMask(24, 32)}}
	return errors.Join(h.LinkSetUp(lo), h.AddrAdd(eth, addr), h.LinkSetUp(eth))
}

// newNamespace makes a network namespace held only by the handle it
// returns (and, later, by the processes started in it). netns.New moves
// the thread it runs on into the new namespace: the spawning thread, which
// returns to its own afterwards.
func newNamespace() (netns.NsHandle, error) {
	ns := netns.None()
	err := runIn(netns.None(), func() (err error) {
		ns, err = netns.New()
		return err
	})
	return ns, err
}

// Endpoints returns every endpoint made so far.
func (l *Lab) Endpoints() []*Endpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Endpoint, 0, len(l.eps))
	for _, e := range l.eps {
		out = append(out, e)
	}
	return out
}

func (l *Lab) endpoint(name string) *Endpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.eps[name]
}

// Close removes the veths and the bridge and lets go of the namespaces;
// the processes in them were stopped before. What a SIGKILL keeps it
// from doing, the kernel does when the coordinator's namespace goes.
func (l *Lab) Close() error {
	l.mu.Lock()
	eps := l.eps
	l.eps = map[string]*Endpoint{}
	l.mu.Unlock()
	var errs []error
	for _, e := range eps {
		if link, err := netlink.LinkByName(e.veth); err == nil {
			errs = append(errs, netlink.LinkDel(link))
		}
		e.close()
	}
	if l.bridge != nil {
		errs = append(errs, netlink.LinkDel(l.bridge))
	}
	l.release()
	return errors.Join(errs...)
}

func (l *Lab) release() {
	labSubnets.Lock()
	labSubnets.used[l.subnet] = false
	labSubnets.Unlock()
}

func (e *Endpoint) close() {
	if e.fw != nil {
		e.fw.close()
	}
	if e.ns.IsOpen() {
		e.ns.Close()
	}
}

// labBackend runs servers as local processes, each in its lab endpoint.
type labBackend struct{ lab *Lab }

func (labBackend) Name() string { return LocalBackend }

// BindHost: every address of the server's own namespace, which are its
// lab address and its own loopback.
func (labBackend) BindHost() string { return "0.0.0.0" }
func (b labBackend) Close() error   { return b.lab.Close() }

func (b labBackend) Reserve(_ context.Context, name string) (string, error) {
	e, err := b.lab.Endpoint(name, false)
	if err != nil {
		return "", err
	}
	return e.IP.String(), nil
}

func (b labBackend) LinkHost(context.Context) (string, error) { return b.lab.Host(), nil }

func (b labBackend) Start(_ context.Context, n *Node, _ Instance) (Instance, error) {
	e, err := b.lab.Endpoint(n.Name, false)
	if err != nil {
		return nil, err
	}
	n.SetHost(e.IP.String())
	spec := n.spec
	spec.Net = e
	return Start(spec)
}

// NewInLab returns a cluster whose servers run on local processes, each
// in its own endpoint of a new lab, and whose links are kernel links.
func NewInLab(dir string) (*Cluster, error) {
	l, err := NewLab()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, backend: labBackend{l}, lab: l, kernel: l}
	trackBackend(c)
	return c, nil
}

// Lab returns the cluster's lab, nil unless it runs in one (NewInLab).
func (c *Cluster) Lab() *Lab { return c.lab }

// KernelLinks reports whether the cluster's links are kernel links: the
// clients dial the servers' own addresses, and a link is a name for the
// faults' rules.
func (c *Cluster) KernelLinks() bool { return c.kernel != nil }

// ClientNet returns the endpoint a client worker called name runs in, nil
// when the cluster has no lab.
func (c *Cluster) ClientNet(name string) (*Endpoint, error) {
	if c.lab == nil {
		return nil, nil
	}
	return c.lab.Endpoint(name, true)
}

// HostNetwork is what the host's network looks like to the tools a user
// would ask: interfaces, named namespaces, iptables and nftables rules,
// without what moves by itself (dates, packet counters). A lab must leave
// it as it found it, however its coordinator ended; tests compare it.
func HostNetwork() (string, error) {
	var b strings.Builder
	counters := regexp.MustCompile(`\[\d+:\d+\]`)
	for _, cmd := range [][]string{{"ip", "-o", "link"}, {"ip", "netns", "list"}, {"iptables-save"}, {"nft", "list", "ruleset"}} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s: %w: %s", strings.Join(cmd, " "), err, out)
		}
		b.WriteString("$ " + strings.Join(cmd, " ") + "\n")
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "#") {
				b.WriteString(counters.ReplaceAllString(line, "") + "\n")
			}
		}
	}
	return b.String(), nil
}
