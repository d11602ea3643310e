package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// firewall is the nftables table of one lab endpoint: an input and an
// output chain whose rules are the kernel links' effects, each rule
// tagged (its user data) with the link, owner and effect it belongs to,
// so that faults that overlap add and remove only their own. Spoken over
// netlink in the endpoint's namespace (github.com/google/nftables): no nft
// program, and nothing of it reaches the host's ruleset.
type firewall struct {
	mu        sync.Mutex
	conn      *nftables.Conn
	table     *nftables.Table
	in, out   *nftables.Chain
	setupErr  error
	setupOnce sync.Once
}

// Verdicts a rule may give.
const (
	VerdictDrop  = "drop"
	VerdictReset = "reset" // TCP only: answer with RST
)

// PacketRule is one rule of a kernel link: packets from (in) or to (Out)
// Peer, dropped or reset, with probability Prob (1: all). Port, when not
// 0, narrows it to the server's port (the destination of what comes in,
// the source of what goes out): where one address serves several servers
// and more (a host of --nodes and its sshd), the address alone would cut
// them all.
type PacketRule struct {
	Out     bool
	Peer    net.IP
	Port    int
	Verdict string
	Prob    float64
}

// Firewall holds a kernel link's rules where its server end's packets
// pass: a lab endpoint's nftables table, or a table on a host of --nodes.
// Each rule is tagged, so that faults that overlap add and remove only
// their own.
type Firewall interface {
	// Add puts rules in place under tag, all or none, and checks that the
	// kernel lists them: a fault is reported only once it is in effect.
	Add(tag string, rules []PacketRule) error
	// Remove deletes every rule whose tag starts with prefix.
	Remove(prefix string) error
	// Tags lists the tags of the rules in place, one per rule, sorted.
	Tags() ([]string, error)
}

// LinkEnds is where a kernel link's rules go: the firewall of its server
// end, the addresses its other end's packets carry, and the port of its
// server end (0: every port of the address).
type LinkEnds struct {
	Firewall Firewall
	Peers    []net.IP
	Port     int
}

// Firewalls places kernel links: a lab (every server and client an
// address of its own) or the hosts of --nodes (cluster/remote).
type Firewalls interface {
	LinkEnds(l *Link) (LinkEnds, error)
}

func (e *Endpoint) firewall() (*firewall, error) {
	e.fwOnce.Do(func() { e.fw = &firewall{} })
	f := e.fw
	f.setupOnce.Do(func() { f.setupErr = f.setup(e) })
	return f, f.setupErr
}

func (f *firewall) setup(e *Endpoint) error {
	conn, err := nftables.New(nftables.WithNetNSFd(int(e.ns)), nftables.AsLasting())
	if err != nil {
		return fmt.Errorf("firewall of %s: %w", e.Name, err)
	}
	f.conn = conn
	f.table = conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "locktest"})
	accept := nftables.ChainPolicyAccept
	chain := func(name string, hook *nftables.ChainHook) *nftables.Chain {
		return conn.AddChain(&nftables.Chain{Name: name, Table: f.table, Type: nftables.ChainTypeFilter,
			Hooknum: hook, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	}
	f.in, f.out = chain("input", nftables.ChainHookInput), chain("output", nftables.ChainHookOutput)
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("firewall of %s: %w", e.Name, err)
	}
	return nil
}

func (f *firewall) close() {
	if f.conn != nil {
		_ = f.conn.CloseLasting()
	}
}

func (f *firewall) Add(tag string, rules []PacketRule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range rules {
		chain := f.in
		if r.Out {
			chain = f.out
		}
		f.conn.AddRule(&nftables.Rule{Table: f.table, Chain: chain, Exprs: exprs(r), UserData: []byte(tag)})
	}
	if err := f.conn.Flush(); err != nil {
		return fmt.Errorf("add %s: %w", tag, err)
	}
	tags, err := f.tagsLocked()
	if err != nil {
		return fmt.Errorf("list rules after adding %s: %w", tag, err)
	}
	if n := countOf(tags, tag); n != len(rules) {
		return fmt.Errorf("add %s: the kernel lists %d of its %d rules", tag, n, len(rules))
	}
	return nil
}

func countOf(tags []string, tag string) int {
	n := 0
	for _, t := range tags {
		if t == tag {
			n++
		}
	}
	return n
}

func (f *firewall) Remove(prefix string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	found := false
	for _, c := range []*nftables.Chain{f.in, f.out} {
		rules, err := f.conn.GetRules(f.table, c)
		if err != nil {
			return fmt.Errorf("list rules: %w", err)
		}
		for _, r := range rules {
			if strings.HasPrefix(string(r.UserData), prefix) {
				errs = append(errs, f.conn.DelRule(r))
				found = true
			}
		}
	}
	if err := errors.Join(errs...); err != nil || !found {
		return err
	}
	if err := f.conn.Flush(); err != nil {
		return fmt.Errorf("remove rules: %w", err)
	}
	return nil
}

func (f *firewall) Tags() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tagsLocked()
}

func (f *firewall) tagsLocked() ([]string, error) {
	var out []string
	for _, c := range []*nftables.Chain{f.in, f.out} {
		rules, err := f.conn.GetRules(f.table, c)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			out = append(out, string(r.UserData))
		}
	}
	slices.Sort(out)
	return out, nil
}

// tcpRST is the RST bit of the TCP header's flags byte (offset 13).
const tcpRST = 0x04

// lossScale is the resolution of a loss probability: numgen draws a
// number in [0, lossScale) per packet.
const lossScale = 10000

// exprs is the rule as nftables expressions: match the peer's address
// (the source of what comes in, the destination of what goes out), TCP
// for a reset, a random draw below the probability, then the verdict.
func exprs(r PacketRule) []expr.Any {
	offset := uint32(12) // IPv4 source address
	if r.Out {
		offset = 16 // destination address
	}
	es := []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: r.Peer.To4()},
	}
	if r.Port != 0 {
		// TCP, and the server's port: the destination (2) of what comes
		// in, the source (0) of what goes out.
		portAt := uint32(2)
		if r.Out {
			portAt = 0
		}
		port := make([]byte, 2)
		binary.BigEndian.PutUint16(port, uint16(r.Port))
		es = append(es, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: portAt, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: port})
	}
	if r.Verdict == VerdictReset {
		// TCP, and not itself a reset: the RST the input rule answers
		// with leaves through the output chain, whose rule would else
		// swallow it.
		es = append(es, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{tcpRST}, Xor: []byte{0}},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0}})
	}
	if r.Prob < 1 {
		// numgen leaves its number in host order; cmp compares bytes, so
		// both sides are big-endian (as nft itself compiles it).
		below := make([]byte, 4)
		binary.BigEndian.PutUint32(below, uint32(r.Prob*lossScale))
		es = append(es, &expr.Numgen{Register: 1, Modulus: lossScale, Type: unix.NFT_NG_RANDOM},
			&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
			&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: below})
	}
	if r.Verdict == VerdictReset {
		return append(es, &expr.Reject{Type: unix.NFT_REJECT_TCP_RST, Code: unix.NFT_REJECT_TCP_RST})
	}
	return append(es, &expr.Verdict{Kind: expr.VerdictDrop})
}
