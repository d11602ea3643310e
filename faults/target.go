package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/locktest/locktest/cluster"
	"github.com/locktest/locktest/history"
	"github.com/locktest/locktest/impls"
)

// Targets is the set of target kinds a fault accepts.
type Targets uint8

const (
	// HolderTarget: the next client to enter its critical section.
	HolderTarget Targets = 1 << iota
	// ClientTargets: a random client ("client") or one by name ("c3").
	ClientTargets
	// NodeTargets: one random server ("node"), a random minority or
	// majority of the servers, every server ("all", as Jepsen pauses a whole
	// cluster), or every server with a role ("primary").
	NodeTargets
	// LinkTargets: one named link ("link:c0:redis-0"), or every link of a
	// client or node target; a node target may add "/clients" (only links
	// from clients) or "/peers" (only links between servers).
	LinkTargets
)

// roles a node target may name.
var roles = []string{cluster.RoleLock, cluster.RolePrimary, cluster.RoleReplica, cluster.RoleSentinel,
	cluster.RoleLeader, cluster.RoleFollower}

// Target is a parsed --fault-target value.
type Target struct {
	Spec  string
	kind  Targets
	set   string // node target: node, minority, majority or a role
	scope string // node target of a link fault: "", "clients" or "peers"
}

// ParseTarget parses a target spec; see Targets for the forms.
func ParseTarget(spec string) (Target, error) {
	t := Target{Spec: spec}
	bad := fmt.Errorf("unknown target %q (valid: holder, client, cN, node, minority, majority, all, %s, link:FROM:TO; "+
		"a node target of a link fault may end in /clients or /peers)", spec, strings.Join(roles, ", "))
	switch set, scope, scoped := strings.Cut(spec, "/"); {
	case strings.HasPrefix(spec, "link:"):
		t.kind = LinkTargets
		if from, to, ok := strings.Cut(strings.TrimPrefix(spec, "link:"), ":"); !ok || from == "" || to == "" {
			return t, bad
		}
	case spec == "holder":
		t.kind = HolderTarget
	case spec == "client" || history.IsClient(spec):
		t.kind = ClientTargets
	case set == "node" || set == "minority" || set == "majority" || set == "all" || slices.Contains(roles, set):
		t.kind, t.set, t.scope = NodeTargets, set, scope
		if scoped && scope != "clients" && scope != "peers" {
			return t, bad
		}
	default:
		return t, bad
	}
	return t, nil
}

// describe lists what a fault accepts, for errors and `locktest list`.
func (a Targets) describe() string {
	if a&LinkTargets != 0 {
		return "link:FROM:TO, or the links of any client or node target, node ones optionally /clients or /peers"
	}
	var parts []string
	if a&HolderTarget != 0 {
		parts = append(parts, "holder")
	}
	if a&ClientTargets != 0 {
		parts = append(parts, "client, cN")
	}
	if a&NodeTargets != 0 {
		parts = append(parts, "node, minority, majority, all, "+strings.Join(roles, "|"))
	}
	return strings.Join(parts, ", ")
}

// TargetHelp says what f aims at by default and what else it accepts.
func TargetHelp(f Fault) string {
	t := f.Traits()
	accepts, def := t.Targets, t.Target
	if accepts == 0 {
		return ""
	}
	if d := accepts.describe(); d != def {
		return fmt.Sprintf("target %s (takes %s)", def, d)
	}
	return "target " + def
}

// acceptedBy reports whether a fault that takes a can aim at t. Link
// faults take every kind: a client or node target means its links.
func (t Target) acceptedBy(a Targets) bool {
	if a&LinkTargets != 0 {
		return true
	}
	return t.kind&a != 0 && t.scope == ""
}

// CheckTarget says why fault f cannot aim at t in design d with n clients,
// or nil. It runs before anything starts; CheckEnv repeats what can only be
// known once the servers run.
func CheckTarget(f Fault, t Target, d impls.Design, clients int) error {
	accepts := f.Traits().Targets
	if accepts == 0 {
		return fmt.Errorf("fault %s takes no target", f.Name())
	}
	if !t.acceptedBy(accepts) {
		return fmt.Errorf("fault %s cannot target %q (it takes %s)", f.Name(), t.Spec, accepts.describe())
	}
	if n, rest, ok := history.ClientIn(t.Spec); ok && rest == "" {
		if n >= clients {
			return fmt.Errorf("target %s: there are only %d clients (c0…c%d)", t.Spec, clients, clients-1)
		}
	}
	if t.kind == LinkTargets {
		return checkLinkEnds(t.Spec, clients)
	}
	if t.kind == NodeTargets && len(d.Roles) > 0 {
		return checkSet(t, d.Name, d.Roles)
	}
	return nil
}

// checkLinkEnds checks what of a link:FROM:TO target is known before the
// servers run: a client end names one of the run's clients, and a link
// from a client leads to a server, not to another client. Which servers
// there are is known only once they run (CheckEnv).
func checkLinkEnds(spec string, clients int) error {
	from, to, _ := strings.Cut(strings.TrimPrefix(spec, "link:"), ":")
	if history.IsClient(to) {
		return fmt.Errorf("target %s: links lead from a client to a server, not to client %s", spec, to)
	}
	if n, rest, ok := history.ClientIn(from); ok && rest == "" && n >= clients {
		return fmt.Errorf("target %s: there are only %d clients (c0…c%d)", spec, clients, clients-1)
	}
	return nil
}

// CheckEnv repeats CheckTarget's node and link checks against the running
// servers and links.
func (t Target) CheckEnv(env *Env) error {
	switch t.kind {
	case NodeTargets:
		var rs []string
		for _, n := range env.Nodes {
			rs = append(rs, n.Role())
		}
		return checkSet(t, "the deployment", rs)
	case LinkTargets:
		name := strings.TrimPrefix(t.Spec, "link:")
		var names []string
		for _, l := range env.Links {
			if l.Name == name {
				return nil
			}
			names = append(names, l.Name)
		}
		return fmt.Errorf("target %s: no such link (links: %s)", t.Spec, strings.Join(names, ", "))
	}
	return nil
}

func checkSet(t Target, design string, nodeRoles []string) error {
	switch t.set {
	case "node", "majority", "all":
		if len(nodeRoles) == 0 {
			return fmt.Errorf("target %s: %s has no servers", t.Spec, design)
		}
	case "minority":
		if len(nodeRoles) < 3 {
			return fmt.Errorf("target %s: %s has %d server(s), too few for a minority (needs 3)", t.Spec, design, len(nodeRoles))
		}
	default:
		if !slices.Contains(nodeRoles, t.set) {
			return fmt.Errorf("target %s: %s has no %s (its servers: %s)", t.Spec, design, t.set, strings.Join(nodeRoles, ", "))
		}
	}
	return nil
}

// pickClient chooses the client a fault hits this time.
func (e *Env) pickClient(ctx context.Context) (int, error) {
	switch {
	case e.Target.Spec == "holder" && e.momentClient >= 0:
		return e.momentClient, nil
	case e.Target.Spec == "holder" && e.strike != nil:
		return e.strike.holderOf(ctx, e) // the holder its partner hits too
	case e.Target.Spec == "holder":
		return e.NextHolder(ctx)
	case e.Target.Spec == "client":
		return e.Rand.IntN(e.Clients.Len()), nil
	}
	if c, rest, ok := history.ClientIn(e.Target.Spec); ok && rest == "" {
		return c, nil
	}
	return 0, fmt.Errorf("target %s is not a client", e.Target.Spec)
}

// pickNodes chooses the servers a fault hits this time, seeded.
func (e *Env) pickNodes() []*cluster.Node { return e.pickAmong(e.Nodes) }

// pickAmong is pickNodes among candidates, some of the servers: those a
// fault can act on in a design that has others too.
func (e *Env) pickAmong(candidates []*cluster.Node) []*cluster.Node {
	nodes := append([]*cluster.Node(nil), candidates...)
	e.Rand.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	switch e.Target.set {
	case "node":
		return nodes[:1]
	case "minority":
		return nodes[:(len(nodes)-1)/2]
	case "majority":
		return nodes[:len(nodes)/2+1]
	case "all":
		return nodes
	}
	var out []*cluster.Node
	for _, n := range candidates {
		if n.Role() == e.Target.set {
			out = append(out, n)
		}
	}
	return out
}

// pickLinks chooses the links a link fault hits this time, names them for
// the history, and lists the ends it aims at (a link target's server end,
// a client, the nodes): a one-way fault drops what goes to or from those.
func (e *Env) pickLinks(ctx context.Context) (links []*cluster.Link, target string, ends []string, err error) {
	if e.Target.kind == LinkTargets {
		name := strings.TrimPrefix(e.Target.Spec, "link:")
		for _, l := range e.Links {
			if l.Name == name {
				return []*cluster.Link{l}, name, []string{l.To}, nil
			}
		}
		return nil, "", nil, fmt.Errorf("no link %s", name)
	}
	if e.Target.kind != NodeTargets {
		c, err := e.pickClient(ctx)
		if err != nil {
			return nil, "", nil, err
		}
		from := history.ClientName(c)
		var out []*cluster.Link
		for _, l := range e.Links {
			if l.From == from {
				out = append(out, l)
			}
		}
		return out, from, []string{from}, nil
	}
	nodes := e.pickNodes()
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	var out []*cluster.Link
	for _, l := range e.Links {
		fromClient := history.IsClient(l.From)
		touches := slices.Contains(names, l.To) || slices.Contains(names, l.From)
		if touches && (e.Target.scope == "" || (e.Target.scope == "clients") == fromClient) {
			out = append(out, l)
		}
	}
	target = strings.Join(names, ",")
	if e.Target.scope != "" {
		target += "/" + e.Target.scope
	}
	return out, target, names, nil
}

// OneClient reports whether t aims at one client's links, not every
// client's: the holder, a client, or a named link from a client.
func (t Target) OneClient() bool {
	if link, ok := strings.CutPrefix(t.Spec, "link:"); ok {
		from, _, _ := strings.Cut(link, ":")
		return history.IsClient(from)
	}
	return t.kind == HolderTarget || t.kind == ClientTargets
}

// ReachesClients reports whether a link fault aimed at t may act on a
// link from a client: not when it aims only at links between servers.
func (t Target) ReachesClients() bool {
	if link, ok := strings.CutPrefix(t.Spec, "link:"); ok {
		from, _, _ := strings.Cut(link, ":")
		return history.IsClient(from)
	}
	return t.scope != "peers"
}
