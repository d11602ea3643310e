package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Raft timing of the etcd nodes. etcd refuses leases shorter than 1.5
// election timeouts (rounded up to whole seconds); 600 ms keeps that floor at
// 1 s, the default --ttl, while a loaded 2-core machine still keeps its
// leader.
const (
	etcdHeartbeat = 100 * time.Millisecond
	etcdElection  = 600 * time.Millisecond
)

// EtcdBinary checks that etcd is installed.
func EtcdBinary() (string, error) { return LookBinary("etcd", "etcd-server") }

// StartEtcd starts an n-member etcd cluster on loopback, each member with
// its data and log in its own directory, and waits until it has elected a
// leader. Members reach each other through peer links: "peers:etcd-0"
// carries every connection dialed to etcd-0's peer port (a member
// advertises one peer URL to all, so links cannot be per pair). Cutting a
// member's links cuts its clients and the streams its peers opened to it,
// on which it sends them its Raft messages; the streams it opened to them
// still bring theirs in. An isolated leader thus loses its followers, they
// elect another, and it steps down when it hears the new term. Node roles
// are asked of etcd each time (RoleLeader, RoleFollower), so a fault aimed
// at "leader" hits the current one.
//
// etcd always keeps its data on disk (fsynced before it acknowledges): a
// killed member restarts from its write-ahead log and rejoins. A member
// restarted empty would have to be removed and added again; that is an
// operator's procedure, not a fault.
func (c *Cluster) StartEtcd(ctx context.Context, n int) ([]*Node, error) {
	bin, err := EtcdBinary()
	if err != nil {
		return nil, err
	}
	nodes := make([]*Node, n)
	peers := make([]string, n)
	peerPorts := make([]int, n)
	hosts := make([]string, n)
	for i := range nodes {
		name := fmt.Sprintf("etcd-%d", i)
		// Below the ephemeral range: the members start one after another,
		// and the links and the members' own connections draw ports from
		// that range in between.
		port, err := staticPort()
		if err != nil {
			return nil, err
		}
		if peerPorts[i], err = staticPort(); err != nil {
			return nil, err
		}
		// Members name their own client address and dial each other's
		// peer links: on a container backend these are not loopback.
		if hosts[i], err = c.ReserveHost(ctx, name); err != nil {
			return nil, err
		}
		l, err := c.Link(LinkName(PeersEnd, name), net.JoinHostPort(hosts[i], strconv.Itoa(peerPorts[i])))
		if err != nil {
			return nil, err
		}
		peers[i] = fmt.Sprintf("%s=http://%s", name, l.Addr())
		nodes[i] = &Node{Name: name, Kind: "etcd", Port: port, ready: etcdListens, roleOf: etcdRole,
			sessions: &sessionCounter{what: "leases", count: etcdLeases, shared: true}}
	}
	// A token unique to the run keeps a member from joining a cluster of
	// another run that happened to get the same ports.
	token := fmt.Sprintf("locktest-%d-%d", peerPorts[0], time.Now().UnixNano())
	for i, node := range nodes {
		bind := c.backend.BindHost()
		node.spec = Spec{Path: bin, Args: []string{
			"--name", node.Name,
			"--data-dir", "data", // relative to the node's directory
			"--listen-client-urls", "http://" + net.JoinHostPort(bind, strconv.Itoa(node.Port)),
			"--advertise-client-urls", "http://" + net.JoinHostPort(hosts[i], strconv.Itoa(node.Port)),
			"--listen-peer-urls", "http://" + net.JoinHostPort(bind, strconv.Itoa(peerPorts[i])),
			"--initial-advertise-peer-urls", strings.TrimPrefix(peers[i], node.Name+"="),
			"--initial-cluster", strings.Join(peers, ","),
			"--initial-cluster-state", "new", "--initial-cluster-token", token,
			"--heartbeat-interval", fmt.Sprint(etcdHeartbeat.Milliseconds()),
			"--election-timeout", fmt.Sprint(etcdElection.Milliseconds()),
			// As etcd 3.5 and later run by default (3.4 does not): a member
			// cut off campaigns in a pre-vote, not a new term, so when it
			// comes back it does not depose the leader elected meanwhile
			// (seen here: a healed leader's term forced two more elections
			// and kept the lock unavailable for seconds after the heal).
			"--pre-vote",
			"--logger", "zap", "--log-outputs", "stderr",
			// A soak's locks write revisions for hours: keep the last
			// 10,000 and few snapshots and WAL files, so a member's data
			// and memory stop growing (an hour uncompacted: 26→104 MB of
			// memory per member). Revisions are numbered as before.
			"--auto-compaction-mode", "revision", "--auto-compaction-retention", "10000",
			"--snapshot-count", "10000", "--max-snapshots", "2", "--max-wals", "2",
		}}
		if err := c.add(ctx, node); err != nil {
			return nil, err
		}
	}
	if err := waitEtcdLeader(ctx, nodes); err != nil {
		return nil, err
	}
	return nodes, nil
}

// etcdListens is a member's readiness on its own: its client port accepts
// connections. A member serves requests only once it has joined a quorum,
// so the first member could not be ready before the others start; the
// cluster waits for a leader after starting them all (waitEtcdLeader), and
// a restarted member catches up while its peers keep the quorum.
func etcdListens(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// waitEtcdLeader waits until every member says the cluster is healthy: a
// leader is elected and the member can commit through it.
func waitEtcdLeader(ctx context.Context, nodes []*Node) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		for {
			tctx, tcancel := context.WithTimeout(ctx, time.Second)
			body, err := etcdGet(tctx, n.Addr(), "/health")
			tcancel()
			if err == nil && strings.Contains(body, `"health":"true"`) {
				break
			}
			if err == nil {
				err = fmt.Errorf("health %s", strings.TrimSpace(body))
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("etcd cluster elected no leader (see %s): %w", n.Dir, errors.Join(ctx.Err(), err))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// etcdRole asks a member whether it leads. A member that does not answer
// within a moment (paused, killed, cut off) is no leader the others follow.
func etcdRole(n *Node) string {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	body, err := etcdGet(ctx, n.Addr(), "/metrics")
	if err != nil {
		return RoleFollower
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if sc.Text() == "etcd_server_is_leader 1" {
			return RoleLeader
		}
	}
	return RoleFollower
}

// etcdGet fetches path from a member's client port.
func etcdGet(ctx context.Context, addr, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK && path != "/health" {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), nil
}

// etcdLeases counts the cluster's live leases (LeaseLeases, through the
// member's JSON gateway; any member answers for all). An etcd lock holds
// its key under its client's lease, which the client keeps alive: a
// lease left after its client is gone is a session leaked (one a process
// goes on keeping alive, as etcd-io/etcd#17470 describes, or one granted
// for long and never revoked), and the connections on the port do not
// show it.
func etcdLeases(ctx context.Context, addr string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v3/lease/leases", strings.NewReader("{}"))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return 0, fmt.Errorf("lease list: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var list struct {
		Leases []json.RawMessage `json:"leases"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, fmt.Errorf("lease list: %w", err)
	}
	return len(list.Leases), nil
}
