package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Link is one proxied TCP connection path, e.g. client c0 to node redis-0,
// or replica redis-1 to its primary redis-0. The dialing side connects to
// Addr instead of the server, so a fault can slow, cut or reset exactly this
// path and nothing else. It works for any TCP protocol.
//
// Links are toxiproxy proxies run inside the coordinator through toxiproxy's
// Go types: no HTTP API, no extra port, and errors come back as values.
//
// In a lab (NewInLab) a link is a kernel link instead: the dialing side
// connects to the server itself, and the link's effects are firewall rules
// in the namespace of its server end, To, that match the addresses of its
// other end: packets dropped or reset as a network would, so a connection
// that a partition spared outlives it. From is then a client, a server, or
// "peers": every other server (etcd's members dial each other's peer port).
type Link struct {
	// Name is "FROM:TO" by convention: FROM is who dials (a client "c0" or
	// a node name), TO the server dialed.
	Name     string
	From, To string
	Upstream string

	proxy *toxiproxy.Proxy
	// kernel places a kernel link's rules; its proxy is nil.
	kernel Firewalls
	// bypass, if set, closes the connections between From and To that
	// do not go through the link (see StartZooKeeper): Cut calls it once
	// the link is cut, so nothing crosses the partition.
	bypass func() error
}

// LinkName names the link on which from dials to.
func LinkName(from, to string) string { return from + ":" + to }

// links is the cluster's embedded toxiproxy.
type links struct {
	once   sync.Once
	server *toxiproxy.ApiServer
	mu     sync.Mutex
	all    []*Link
}

// Link starts a proxy to upstream on a free loopback port. name is
// "FROM:TO" (see Link). Deploy functions use it for replication links;
// the runner for every client→node and client→resource link.
func (c *Cluster) Link(name, upstream string) (*Link, error) {
	from, to, ok := strings.Cut(name, ":") // see LinkName
	if !ok {
		to = name
	}
	// "FROM:TO/PURPOSE" is a further link between the same two, to another
	// port of TO (ZooKeeper's election port, say): it belongs to TO.
	to, _, _ = strings.Cut(to, "/")
	if c.kernel != nil {
		return c.addLink(&Link{Name: name, From: from, To: to, Upstream: upstream, kernel: c.kernel})
	}
	c.links.once.Do(func() {
		c.links.server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	host, err := c.backend.LinkHost(ctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	p := toxiproxy.NewProxy(c.links.server, name, net.JoinHostPort(host, "0"), upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	l, err := c.addLink(&Link{Name: name, From: from, To: to, Upstream: upstream, proxy: p})
	if err != nil {
		p.Stop()
	}
	return l, err
}

// addLink registers l unless a link of its name exists.
func (c *Cluster) addLink(l *Link) (*Link, error) {
	c.links.mu.Lock()
	defer c.links.mu.Unlock()
	for _, o := range c.links.all {
		if o.Name == l.Name {
			return nil, fmt.Errorf("link %s: already exists", l.Name)
		}
	}
	c.links.all = append(c.links.all, l)
	return l, nil
}

// Links returns every link, sorted by name.
func (c *Cluster) Links() []*Link {
	c.links.mu.Lock()
	defer c.links.mu.Unlock()
	out := append([]*Link(nil), c.links.all...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (c *Cluster) closeLinks() {
	c.links.mu.Lock()
	all := c.links.all
	c.links.all = nil
	c.links.mu.Unlock()
	for _, l := range all {
		if l.proxy != nil {
			l.proxy.Stop()
		}
	}
}

// Addr is the address the dialing side connects to: the proxy's, or the
// server's own for a kernel link.
func (l *Link) Addr() string {
	if l.proxy == nil {
		return l.Upstream
	}
	return l.proxy.Listen
}

// Kernel reports whether the link's effects are firewall rules (a lab's
// link), not a proxy's.
func (l *Link) Kernel() bool { return l.kernel != nil }

// Effects are toxics named "OWNER/EFFECT": faults that overlap on one link
// (latency and a cut, say) each add and remove only their own.

// Stream is one direction of a link's bytes.
type Stream string

const (
	// Requests flow from the dialing side (a client) to the server.
	Requests Stream = "upstream"
	// Replies flow from the server back.
	Replies Stream = "downstream"
)

// Latency delays every chunk of one stream of the link by latency ±
// jitter, so a round trip takes that much longer: a delayed request
// reaches the server late, a delayed reply tells the client late what the
// server did on time. A chunk in flight when the latency is removed is
// delivered at once.
func (l *Link) Latency(owner string, s Stream, latency, jitter time.Duration) error {
	if l.Kernel() {
		return fmt.Errorf("link %s: a kernel link cannot delay packets (this kernel has no netem); latency runs use the proxy", l.Name)
	}
	return l.add(owner+"/latency-"+string(s), "latency", string(s), map[string]int64{
		"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Cut partitions the link: bytes in both directions are dropped, so calls
// time out (connections still open, as a silent network does). On a proxy,
// healing closes the connections that were cut, as TCP eventually does
// after a partition outlasts its retransmissions; new connections work at
// once. On a kernel link, packets are dropped both ways and connections
// resume on heal, unless an end's own timeout closed them meanwhile.
func (l *Link) Cut(owner string) error {
	if l.Kernel() {
		return l.addRules(owner, "cut", PacketRule{Verdict: VerdictDrop, Prob: 1},
			PacketRule{Out: true, Verdict: VerdictDrop, Prob: 1})
	}
	err := errors.Join(
		l.add(owner+"/cut-up", "timeout", "upstream", map[string]int64{"timeout": 0}),
		l.add(owner+"/cut-down", "timeout", "downstream", map[string]int64{"timeout": 0}))
	if err == nil && l.bypass != nil {
		if err = l.bypass(); err != nil {
			err = fmt.Errorf("link %s: close connections around it: %w", l.Name, err)
		}
	}
	return err
}

// Reset makes the link reset its connections as soon as data flows in
// either direction, as a peer that answers with RST.
func (l *Link) Reset(owner string) error {
	if l.Kernel() {
		return l.addRules(owner, "reset", PacketRule{Verdict: VerdictReset, Prob: 1},
			PacketRule{Out: true, Verdict: VerdictReset, Prob: 1})
	}
	return errors.Join(
		l.add(owner+"/reset-up", "reset_peer", "upstream", map[string]int64{"timeout": 0}),
		l.add(owner+"/reset-down", "reset_peer", "downstream", map[string]int64{"timeout": 0}))
}

// Drop partitions the link one way: packets toward its server end To
// (towardTo) or from it are dropped, the others pass. Kernel links only.
func (l *Link) Drop(owner string, towardTo bool) error {
	if !l.Kernel() {
		return fmt.Errorf("link %s: a one-way partition needs --network netns", l.Name)
	}
	if towardTo {
		return l.addRules(owner, "drop-in", PacketRule{Verdict: VerdictDrop, Prob: 1})
	}
	return l.addRules(owner, "drop-out", PacketRule{Out: true, Verdict: VerdictDrop, Prob: 1})
}

// Lose drops each packet of the link, both ways, with probability p.
// Kernel links only.
func (l *Link) Lose(owner string, p float64) error {
	if !l.Kernel() {
		return fmt.Errorf("link %s: packet loss needs --network netns", l.Name)
	}
	return l.addRules(owner, "loss", PacketRule{Verdict: VerdictDrop, Prob: p},
		PacketRule{Out: true, Verdict: VerdictDrop, Prob: p})
}

// tag is what the rules of owner's effect on l carry.
func (l *Link) tag(owner, effect string) string { return l.Name + "|" + owner + "|" + effect }

// addRules puts the effect's rules, one set per address of the link's
// other end, into the firewall of its server end, and checks they are in
// place.
func (l *Link) addRules(owner, effect string, rules ...PacketRule) error {
	ends, err := l.kernel.LinkEnds(l)
	if err != nil {
		return err
	}
	var all []PacketRule
	for _, p := range ends.Peers {
		for _, r := range rules {
			r.Peer, r.Port = p, ends.Port
			all = append(all, r)
		}
	}
	if err := ends.Firewall.Add(l.tag(owner, effect), all); err != nil {
		return fmt.Errorf("link %s: %w", l.Name, err)
	}
	return nil
}

// LinkEnds: in a lab, the firewall of the link's server end, and the
// addresses of its other end, each server's and client's own.
func (lab *Lab) LinkEnds(l *Link) (LinkEnds, error) {
	to := lab.endpoint(l.To)
	if to == nil {
		return LinkEnds{}, fmt.Errorf("link %s: %s has no place in the lab", l.Name, l.To)
	}
	var peers []net.IP
	if l.From == PeersEnd {
		for _, e := range lab.Endpoints() {
			if !e.Client && e != to {
				peers = append(peers, e.IP)
			}
		}
	} else if from := lab.endpoint(l.From); from != nil {
		peers = append(peers, from.IP)
	} else {
		return LinkEnds{}, fmt.Errorf("link %s: %s has no place in the lab", l.Name, l.From)
	}
	fw, err := to.firewall()
	return LinkEnds{Firewall: fw, Peers: peers}, err
}

// PeersEnd is the dialing end of a link every other server dials: a
// fault that cuts it cuts the server off from the rest of its cluster.
const PeersEnd = "peers"

// Heal removes owner's effects from the link; owner "" removes them all.
func (l *Link) Heal(owner string) error {
	if l.Kernel() {
		prefix := l.Name + "|"
		if owner != "" {
			prefix += owner + "|"
		}
		ends, err := l.kernel.LinkEnds(l)
		if err != nil {
			return err
		}
		if err := ends.Firewall.Remove(prefix); err != nil {
			return fmt.Errorf("link %s: heal: %w", l.Name, err)
		}
		return nil
	}
	var errs []error
	for _, name := range l.Toxics() {
		if owner != "" && !strings.HasPrefix(name, owner+"/") {
			continue
		}
		if err := l.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
			errs = append(errs, fmt.Errorf("link %s: remove %s: %w", l.Name, name, err))
		}
	}
	return errors.Join(errs...)
}

// Toxics names the effects active on the link, as toxiproxy or the
// kernel's firewall reports them ("OWNER/EFFECT").
func (l *Link) Toxics() []string {
	var names []string
	if l.Kernel() {
		ends, err := l.kernel.LinkEnds(l)
		if err != nil {
			return []string{"unknown: " + err.Error()}
		}
		tags, err := ends.Firewall.Tags()
		if err != nil {
			return []string{"unknown: " + err.Error()}
		}
		for _, t := range tags {
			if rest, ok := strings.CutPrefix(t, l.Name+"|"); ok {
				names = append(names, strings.Replace(rest, "|", "/", 1))
			}
		}
		return slices.Compact(names) // sorted by tags
	}
	for _, t := range l.proxy.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok {
			names = append(names, w.Name)
		}
	}
	sort.Strings(names)
	return names
}

func (l *Link) add(name, typ, stream string, attrs map[string]int64) error {
	spec, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(string(spec))); err != nil {
		return fmt.Errorf("link %s: add %s: %w", l.Name, name, err)
	}
	return nil
}
