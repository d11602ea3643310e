package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locktest/locktest/cluster"
)

// DoTable is an Entry for an nftables table made on a host: deleted.
const DoTable = "nft-table"

// The hosts' firewalls (--network firewall). Each run has one nftables
// table of its own on a host, in the inet family, with an input and an
// output chain: the host's own rules, and other programs' tables, are
// never touched, and deleting the table undoes everything the run did
// there. Every rule names a server's port besides the peer's address, so
// that the host's SSH server (the run's own connection) and whatever else
// it serves pass untouched. The rules are made with the nft program over
// SSH, as root or through sudo.

// tableName is the run's table on every host: its run directory's name,
// which nft accepts in an identifier.
func tableName(remoteDir string) string {
	return "locktest_" + regexp.MustCompile(`[^A-Za-z0-9_]`).ReplaceAllString(path.Base(remoteDir), "_")
}

// ourTable matches the names tableName gives: heal deletes no other.
var ourTable = regexp.MustCompile(`^locktest_[A-Za-z0-9_]+$`)

// nft is the nft command on h: through sudo unless h's user is root,
// never asking for a password. A login's PATH may lack /usr/sbin, where
// Debian puts nft; sudo's secure_path has it.
func (h *Host) nft() string {
	if h.user == "root" {
		return "PATH=$PATH:/usr/sbin:/sbin nft"
	}
	return "sudo -n nft"
}

// FirewallError says a host's firewall cannot be changed by the run.
type FirewallError struct {
	Host, User, Why string
}

func (e *FirewallError) Error() string {
	return fmt.Sprintf("host %s: user %s cannot change its firewall (%s): --network firewall needs nft there (Debian's nftables) "+
		"and root: log in as root, or let %s run nft through sudo without a password",
		e.Host, e.User, e.Why, e.User)
}

// CheckFirewall asks every host whether the run may change its firewall
// (nft lists the tables), before anything of the run exists.
func CheckFirewall(ctx context.Context, hosts []*Host) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			_, err := h.Run(ctx, h.nft()+" list tables >/dev/null", nil)
			var rerr *RemoteError
			if errors.As(err, &rerr) {
				err = &FirewallError{Host: h.Name, User: h.user, Why: firstLine(strings.TrimSpace(rerr.Stderr))}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// hostFirewall is the run's table on one host.
type hostFirewall struct {
	b     *Backend
	h     *Host
	table string

	mu   sync.Mutex
	made bool
	// rules are the rules added and not yet deleted, by tag: this run
	// alone writes its table, so a heal deletes them by handle without
	// asking the host for a listing first.
	rules map[string][]listedRule

	// A fault changes many links at once (faults.onAll), and a session
	// costs a round trip and more: what callers ask while a script runs
	// goes to the host together, as the next script (group commit).
	queue   sync.Mutex
	pending *nftBatch
	running sync.Mutex
}

// nftBatch is one script for every caller that added a part to it.
type nftBatch struct {
	script strings.Builder
	done   chan struct{}
	out    string
	err    error
}

// batchLinger is how long the first caller of a batch waits for the
// others of the same fault, which start together: far less than a
// session takes.
const batchLinger = 5 * time.Millisecond

// submit runs part with the other parts asked for meanwhile, in one
// nft -f - (atomic: a part that fails fails the batch), and returns what
// nft echoed of all of them.
func (f *hostFirewall) submit(part string) (string, error) {
	f.queue.Lock()
	b, lead := f.pending, false
	if b == nil {
		b, lead = &nftBatch{done: make(chan struct{})}, true
		f.pending = b
	}
	b.script.WriteString(part)
	f.queue.Unlock()
	if !lead {
		<-b.done
		return b.out, b.err
	}
	time.Sleep(batchLinger)
	f.running.Lock()
	f.queue.Lock()
	f.pending = nil
	script := b.script.String()
	f.queue.Unlock()
	b.out, b.err = f.nftRun(script, "--echo", "--handle")
	f.running.Unlock()
	close(b.done)
	return b.out, b.err
}

// LinkEnds places a link's rules for --network firewall: in the table on
// its server's host, for the server's port, against the address of the
// host its other end dials from: the control host's (as that host sees
// it) for a client, the host of a node, or every host that holds another
// server for "peers". A host's nodes share its address: a rule against
// it holds for every node of that host, which docs/remote.md says.
func (b *Backend) LinkEnds(l *cluster.Link) (cluster.LinkEnds, error) {
	to, ok := b.placed(l.To)
	if !ok {
		return cluster.LinkEnds{}, fmt.Errorf("link %s: %s runs on no host", l.Name, l.To)
	}
	_, portText, err := net.SplitHostPort(l.Upstream)
	if err != nil {
		return cluster.LinkEnds{}, fmt.Errorf("link %s: %w", l.Name, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return cluster.LinkEnds{}, fmt.Errorf("link %s: port %q: %w", l.Name, portText, err)
	}
	var peers []net.IP
	add := func(addr string) error {
		ip := net.ParseIP(addr).To4()
		if ip == nil {
			return fmt.Errorf("link %s: %q is no IPv4 address (the firewall's rules match IPv4 addresses)", l.Name, addr)
		}
		if !slices.ContainsFunc(peers, ip.Equal) {
			peers = append(peers, ip)
		}
		return nil
	}
	b.mu.Lock()
	var from []string
	switch h, ok := b.assigned[l.From]; {
	case l.From == cluster.PeersEnd:
		for name, h := range b.assigned {
			if name != l.To {
				from = append(from, h.IP)
			}
		}
	case ok:
		from = append(from, h.IP)
	default: // a client, on the control host
		from = append(from, to.LocalIP)
	}
	b.mu.Unlock()
	slices.Sort(from)
	for _, a := range from {
		if err := add(a); err != nil {
			return cluster.LinkEnds{}, err
		}
	}
	return cluster.LinkEnds{Firewall: b.firewallOf(to), Peers: peers, Port: port}, nil
}

// placed returns the host a node was given, if it was.
func (b *Backend) placed(name string) (*Host, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.assigned[name]
	return h, ok
}

func (b *Backend) firewallOf(h *Host) *hostFirewall {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.firewalls == nil {
		b.firewalls = map[*Host]*hostFirewall{}
	}
	f, ok := b.firewalls[h]
	if !ok {
		f = &hostFirewall{b: b, h: h, table: tableName(b.remoteDir), rules: map[string][]listedRule{}}
		b.firewalls[h] = f
	}
	return f
}

// nftRun feeds script to nft on the host (nft -f -, atomic: all of it
// or nothing) with args, or runs nft with args alone.
func (f *hostFirewall) nftRun(script string, args ...string) (string, error) {
	ctx, cancel := opCtx()
	defer cancel()
	cmd := f.h.nft() + " " + strings.Join(args, " ")
	var in io.Reader
	if script != "" {
		cmd += " -f -"
		in = strings.NewReader(script)
	}
	out, err := f.h.Run(ctx, cmd, in)
	if err != nil {
		return "", fmt.Errorf("firewall of host %s: %w", f.h.Name, err)
	}
	return out, nil
}

// makeTable makes the run's table on the host, recorded first.
func (f *hostFirewall) makeTable() error {
	if f.made {
		return nil
	}
	if err := f.b.journal.Record(Entry{Host: f.h.Name, Do: DoTable, Path: f.table}); err != nil {
		return err
	}
	t := "inet " + f.table
	if _, err := f.nftRun("add table " + t + "\n" +
		"add chain " + t + " input { type filter hook input priority 0 ; policy accept ; }\n" +
		"add chain " + t + " output { type filter hook output priority 0 ; policy accept ; }\n"); err != nil {
		return err
	}
	f.made = true
	return nil
}

// nftRule is r in nft's syntax, in the run's table.
func (f *hostFirewall) nftRule(tag string, r cluster.PacketRule) string {
	chain, addr, port := "input", "saddr", "dport"
	if r.Out {
		chain, addr, port = "output", "daddr", "sport"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "add rule inet %s %s ip %s %s", f.table, chain, addr, r.Peer)
	if r.Port != 0 {
		fmt.Fprintf(&b, " tcp %s %d", port, r.Port)
	}
	if r.Prob < 1 {
		fmt.Fprintf(&b, " numgen random mod %d < %d", lossScale, int(r.Prob*lossScale))
	}
	if r.Verdict == cluster.VerdictReset {
		// Not a reset itself: the RST the input rule answers with leaves
		// through the output chain, whose rule would else swallow it.
		b.WriteString(" meta l4proto tcp tcp flags & rst == 0 reject with tcp reset")
	} else {
		b.WriteString(" drop")
	}
	fmt.Fprintf(&b, " comment %q\n", tag)
	return b.String()
}

// lossScale is the resolution of a loss probability, as in the lab.
const lossScale = 10000

func (f *hostFirewall) Add(tag string, rules []cluster.PacketRule) error {
	if strings.ContainsAny(tag, "\"\\\n") {
		return fmt.Errorf("firewall rule tag %q: quotes, backslashes and newlines are not allowed", tag)
	}
	f.mu.Lock()
	err := f.makeTable()
	f.mu.Unlock()
	if err != nil {
		return err
	}
	var script strings.Builder
	for _, r := range rules {
		script.WriteString(f.nftRule(tag, r))
	}
	// nft echoes each rule it added with its handle.
	out, err := f.submit(script.String())
	if err != nil {
		return fmt.Errorf("add %s: %w", tag, err)
	}
	var added []listedRule
	for _, r := range parseRules(out) {
		if r.tag == tag {
			added = append(added, r)
		}
	}
	f.mu.Lock()
	f.rules[tag] = append(f.rules[tag], added...)
	f.mu.Unlock()
	if len(added) != len(rules) {
		return fmt.Errorf("add %s: host %s echoed %d of its %d rules", tag, f.h.Name, len(added), len(rules))
	}
	return nil
}

func (f *hostFirewall) Remove(prefix string) error {
	f.mu.Lock()
	var script strings.Builder
	var tags []string
	for tag, rs := range f.rules {
		if !strings.HasPrefix(tag, prefix) {
			continue
		}
		tags = append(tags, tag)
		for _, r := range rs {
			fmt.Fprintf(&script, "delete rule inet %s %s handle %d\n", f.table, r.chain, r.handle)
		}
	}
	f.mu.Unlock()
	if script.Len() == 0 {
		return nil
	}
	if _, err := f.submit(script.String()); err != nil {
		return fmt.Errorf("remove rules %s*: %w", prefix, err)
	}
	f.mu.Lock()
	for _, tag := range tags {
		delete(f.rules, tag)
	}
	f.mu.Unlock()
	return nil
}

// Tags asks the host: what is in effect, not what the run believes.
func (f *hostFirewall) Tags() ([]string, error) {
	f.mu.Lock()
	made := f.made
	f.mu.Unlock()
	if !made {
		return nil, nil
	}
	out, err := f.nftRun("", "-a", "list", "table", "inet", f.table)
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, r := range parseRules(out) {
		tags = append(tags, r.tag)
	}
	slices.Sort(tags)
	return tags, nil
}

// listedRule is a tagged rule of `nft -a list table`.
type listedRule struct {
	chain  string
	tag    string
	handle int
}

var (
	chainLine = regexp.MustCompile(`^\s*chain (\S+) \{`)
	echoLine  = regexp.MustCompile(`^add rule inet \S+ (\S+) `)
	ruleLine  = regexp.MustCompile(`comment "([^"]*)" # handle (\d+)\s*$`)
)

// parseRules reads the tagged rules of a table's listing (nft -a list
// table) or of what nft echoed as it added them (--echo --handle).
func parseRules(listing string) []listedRule {
	var out []listedRule
	chain := ""
	for _, line := range strings.Split(listing, "\n") {
		if m := chainLine.FindStringSubmatch(line); m != nil {
			chain = m[1]
			continue
		}
		if m := echoLine.FindStringSubmatch(line); m != nil {
			chain = m[1]
		}
		if m := ruleLine.FindStringSubmatch(line); m != nil {
			h, _ := strconv.Atoi(m[2])
			out = append(out, listedRule{chain: chain, tag: m[1], handle: h})
		}
	}
	return out
}

// dropTable is the script that deletes a run's table, if it is there.
func dropTable(h *Host, table string) string {
	return fmt.Sprintf("%s list table inet %s >/dev/null 2>&1 || exit 0\n%s delete table inet %s",
		h.nft(), table, h.nft(), table)
}

// closeFirewalls deletes the run's table on every host it made one on.
func (b *Backend) closeFirewalls(ctx context.Context) error {
	b.mu.Lock()
	fws := make([]*hostFirewall, 0, len(b.firewalls))
	for _, f := range b.firewalls {
		fws = append(fws, f)
	}
	b.mu.Unlock()
	var errs []error
	for _, f := range fws {
		f.mu.Lock()
		made := f.made
		f.mu.Unlock()
		if !made {
			continue
		}
		if _, err := f.h.Run(ctx, dropTable(f.h, f.table), nil); err != nil {
			errs = append(errs, fmt.Errorf("firewall of host %s: %w", f.h.Name, err))
			continue
		}
		errs = append(errs, b.journal.Record(Entry{Host: f.h.Name, Do: DoTable, Path: f.table, Undone: true}))
	}
	return errors.Join(errs...)
}
