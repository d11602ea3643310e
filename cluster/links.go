package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
type Link struct {
	// Name is "FROM:TO" by convention: FROM is who dials (a client "c0" or
	// a node name), TO the server dialed.
	Name     string
	From, To string
	Upstream string

	proxy *toxiproxy.Proxy
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
	c.links.once.Do(func() {
		c.links.server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	from, to, ok := strings.Cut(name, ":") // see LinkName
	if !ok {
		to = name
	}
	// "FROM:TO/PURPOSE" is a further link between the same two, to another
	// port of TO (ZooKeeper's election port, say): it belongs to TO.
	to, _, _ = strings.Cut(to, "/")
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
	l := &Link{Name: name, From: from, To: to, Upstream: upstream, proxy: p}
	c.links.mu.Lock()
	defer c.links.mu.Unlock()
	for _, o := range c.links.all {
		if o.Name == name {
			p.Stop()
			return nil, fmt.Errorf("link %s: already exists", name)
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
		l.proxy.Stop()
	}
}

// Addr is the address the dialing side connects to.
func (l *Link) Addr() string { return l.proxy.Listen }

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
	return l.add(owner+"/latency-"+string(s), "latency", string(s), map[string]int64{
		"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Cut partitions the link: bytes in both directions are dropped, so calls
// time out (connections still open, as a silent network does). Healing
// closes the connections that were cut, as TCP eventually does after a
// partition outlasts its retransmissions; new connections work at once.
func (l *Link) Cut(owner string) error {
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
	return errors.Join(
		l.add(owner+"/reset-up", "reset_peer", "upstream", map[string]int64{"timeout": 0}),
		l.add(owner+"/reset-down", "reset_peer", "downstream", map[string]int64{"timeout": 0}))
}

// Heal removes owner's effects from the link; owner "" removes them all.
func (l *Link) Heal(owner string) error {
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

// Toxics names the effects active on the link, as toxiproxy reports them.
func (l *Link) Toxics() []string {
	var names []string
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
