package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Link is one proxied TCP connection path, e.g. client c0 to node redis-0,
// or replica redis-1 to its primary redis-0. The dialing side connects to
// Addr instead of the server, so a fault can slow, cut or reset exactly this
// path and nothing else. It works for any TCP protocol.
//
// The effects are toxiproxy's, run inside the coordinator through its Go
// types: no HTTP API, no extra port, and errors come back as values. Its
// path costs every chunk a hop through a chain of goroutines, though,
// which was a third of the coordinator's CPU in a fast run. So a link
// relays a connection itself, with io.Copy between the two TCP sockets
// (splice(2) on Linux), while the link has no effect, and hands it to
// toxiproxy's path the moment an effect is added: the copies are stopped
// by a read deadline at a byte boundary, and toxiproxy reads on from there.
// A connection stays on toxiproxy's path once handed over; the links
// accepted after the last effect was removed are relayed directly again.
type Link struct {
	// Name is "FROM:TO" by convention: FROM is who dials (a client "c0" or
	// a node name), TO the server dialed.
	Name     string
	From, To string
	Upstream string

	proxy  *toxiproxy.Proxy // its Toxics only: the link accepts itself
	server *toxiproxy.ApiServer
	ln     net.Listener
	served sync.WaitGroup // the accept loop
	// mu orders adding an effect against accepting a connection, so a
	// connection is relayed directly only while the link has no effect.
	mu    sync.Mutex
	conns []*linkConn // open or recently closed connections
	// bypass, if set, closes the connections between From and To that
	// do not go through the link (see StartZooKeeper): Cut calls it once
	// the link is cut, so nothing crosses the partition.
	bypass func() error
}

// linkConn is one connection through a link: the dialing side's and the
// link's own to the upstream.
type linkConn struct {
	id               string
	client, upstream *net.TCPConn
	// direct: relayed by the link itself, not yet handed to toxiproxy.
	direct bool
	// handing is set before the read deadlines that stop the copies, so
	// that they tell a hand-over from an error.
	handing atomic.Bool
	copies  sync.WaitGroup // each direction's copy, until it ended or handed over
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
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	l := &Link{Name: name, From: from, To: to, Upstream: upstream, ln: ln, server: c.links.server,
		proxy: toxiproxy.NewProxy(c.links.server, name, ln.Addr().String(), upstream)}
	c.links.mu.Lock()
	defer c.links.mu.Unlock()
	for _, o := range c.links.all {
		if o.Name == name {
			ln.Close()
			return nil, fmt.Errorf("link %s: already exists", name)
		}
	}
	c.links.all = append(c.links.all, l)
	l.served.Add(1)
	go l.accept()
	return l, nil
}

// accept serves the link's connections until its listener closes.
func (l *Link) accept() {
	defer l.served.Done()
	for n := 0; ; n++ {
		c, err := l.ln.Accept()
		if err != nil {
			return // closed by stop
		}
		// The dial goes straight to the upstream, never through effects:
		// a cut link accepts and connects, and then drops the bytes.
		up, err := net.DialTimeout("tcp", l.Upstream, 5*time.Second)
		if err != nil {
			slog.Debug("link: dial upstream", "link", l.Name, "err", err)
			c.Close()
			continue
		}
		l.serve(&linkConn{id: strconv.Itoa(n), client: c.(*net.TCPConn), upstream: up.(*net.TCPConn)})
	}
}

// serve relays lc directly while the link has no effect, else through
// toxiproxy.
func (l *Link) serve(lc *linkConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Forget the connections that ended, whichever path they took: both
	// sockets closed.
	l.conns = slices.DeleteFunc(l.conns, func(o *linkConn) bool { return closed(o.client) && closed(o.upstream) })
	l.conns = append(l.conns, lc)
	if len(l.Toxics()) > 0 {
		l.toxify(lc, lc.client, lc.upstream, stream.Upstream)
		l.toxify(lc, lc.upstream, lc.client, stream.Downstream)
		return
	}
	lc.direct = true
	lc.copies.Add(2)
	go l.relay(lc, lc.client, lc.upstream, stream.Upstream)
	go l.relay(lc, lc.upstream, lc.client, stream.Downstream)
}

// relay copies src to dst until either side ends, then closes both, as
// toxiproxy does; or, stopped by handOver, hands the rest to toxiproxy.
func (l *Link) relay(lc *linkConn, src, dst *net.TCPConn, dir stream.Direction) {
	defer lc.copies.Done()
	_, err := io.Copy(dst, src)
	if lc.handing.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		if err := src.SetReadDeadline(time.Time{}); err == nil {
			l.toxify(lc, src, dst, dir)
			return
		}
	}
	lc.client.Close()
	lc.upstream.Close()
}

// toxify sends src to dst through toxiproxy's chain of effects.
func (l *Link) toxify(lc *linkConn, src, dst *net.TCPConn, dir stream.Direction) {
	l.proxy.Toxics.StartLink(l.server, lc.id+dir.String(), src, dst, dir)
}

// handOver moves the directly relayed connections to toxiproxy's path and
// returns once they are on it, so that an effect added next acts on every
// connection; l.mu held. A byte the copy read has been written on: the
// deadline stops splice(2) only while it waits to read.
func (l *Link) handOver() {
	var moved []*linkConn
	for _, lc := range l.conns {
		if !lc.direct {
			continue
		}
		lc.direct = false
		lc.handing.Store(true)
		// An error means the socket is closed: its copy ends on its own.
		_ = lc.client.SetReadDeadline(time.Now())
		_ = lc.upstream.SetReadDeadline(time.Now())
		moved = append(moved, lc)
	}
	for _, lc := range moved {
		lc.copies.Wait()
	}
}

// closed reports whether c was closed (by this side).
func closed(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	return err != nil || rc.Control(func(uintptr) {}) != nil
}

// stop closes the listener and every connection through the link.
func (l *Link) stop() {
	l.ln.Close()
	l.served.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lc := range l.conns {
		lc.client.Close()
		lc.upstream.Close()
	}
	l.conns = nil
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
		l.stop()
	}
}

// Addr is the address the dialing side connects to.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Effects are toxics named "OWNER/EFFECT": faults that overlap on one link
// (latency and a cut, say) each add and remove only their own.

// Latency delays every request on the link (client→server bytes) by
// latency ± jitter, so a round trip takes that much longer. A chunk in
// flight when the latency is removed is delivered at once.
func (l *Link) Latency(owner string, latency, jitter time.Duration) error {
	return l.add(owner+"/latency", "latency", "upstream", map[string]int64{
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
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handOver()
	spec, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(string(spec))); err != nil {
		return fmt.Errorf("link %s: add %s: %w", l.Name, name, err)
	}
	return nil
}
