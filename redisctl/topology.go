package redisctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// Topology is the merged view of a cluster, read from every reachable node.
type Topology struct {
	// Nodes is the merged node list, sorted by address. Each node's fields come from its own
	// "myself" line when it answered, else from the first view (by address) that lists it. The
	// flags fail and fail? are added when any other view reports them, and LinkState is
	// "disconnected" when any other view's link to the node is down. The flag myself is dropped.
	Nodes []Node
	// Views are the raw views of the nodes that answered, sorted by address.
	Views []View
	// Unreachable maps the address of every queried node that did not answer to the error.
	Unreachable map[string]error
	// Disagreements lists where the views differ, sorted by node ID and field.
	Disagreements []Disagreement
}

// Disagreement is one field of one node on which the views differ.
type Disagreement struct {
	// NodeID is the node the views disagree about.
	NodeID string
	// Field is one of "known", "addr", "role", "master", "slots", "config-epoch", "failing".
	Field string
	// Values maps each reporting node's address to what it says; "(absent)" when the node is
	// missing from that view.
	Values map[string]string
}

// String formats d as "node <id> <field>: <addr>=<value>, ...".
func (d Disagreement) String() string {
	addrs := make([]string, 0, len(d.Values))
	for a := range d.Values {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = a + "=" + d.Values[a]
	}
	return fmt.Sprintf("node %s %s: %s", shortID(d.NodeID), d.Field, strings.Join(parts, ", "))
}

// Topology reads the views of addrs, and of every further node address those views list, and
// merges them. It fails only when no node answers (or ctx ends); unreachable nodes are listed in
// Topology.Unreachable. Errors of single nodes never include the password.
func (c *Client) Topology(ctx context.Context, addrs []string) (*Topology, error) {
	addrs = uniq(addrs)
	if len(addrs) == 0 {
		return nil, errors.New("redisctl: topology: no node addresses")
	}
	views, errs := c.readViews(ctx, addrs)
	// Views read concurrently may predate an alias another view taught (announce.go).
	for i := range views {
		c.relocalize(views[i].Nodes)
		c.localizeReplication(&views[i].Replication)
	}
	// Nodes the views know of but the caller did not list (for example a member at an address
	// no pod has any more) are part of the cluster too.
	seen := map[string]bool{}
	for _, a := range addrs {
		seen[a] = true
	}
	var more []string
	for _, v := range views {
		for _, n := range v.Nodes {
			if a := n.Addr(); n.IsUsable() && !seen[a] {
				seen[a] = true
				more = append(more, a)
			}
		}
	}
	if len(more) > 0 {
		v2, e2 := c.readViews(ctx, uniq(more))
		views = append(views, v2...)
		sort.Slice(views, func(a, b int) bool { return views[a].Addr < views[b].Addr })
		for a, e := range e2 {
			errs[a] = e
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("redisctl: topology: %w", ctx.Err())
	}
	t := MergeViews(views)
	t.Unreachable = errs
	if len(views) == 0 {
		var msgs []string
		for _, a := range uniq(keys(errs)) {
			msgs = append(msgs, errs[a].Error())
		}
		// The empty topology goes with the error, for CheckHealth's reasons.
		return t, c.errf("topology: no node answered: %s", strings.Join(msgs, "; "))
	}
	return t, nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// MergeViews merges views (see Topology.Nodes for the rules) and lists their disagreements.
func MergeViews(views []View) *Topology {
	t := &Topology{Views: views, Unreachable: map[string]error{}}
	self := map[string]Node{}  // id → own line
	first := map[string]Node{} // id → first line seen
	var ids []string
	for _, v := range views {
		for _, n := range v.Nodes {
			if _, ok := first[n.ID]; !ok {
				first[n.ID] = n
				ids = append(ids, n.ID)
			}
			if n.IsMyself() {
				self[n.ID] = n
			}
		}
	}
	for _, id := range ids {
		n, ok := self[id]
		if !ok {
			n = first[id]
		}
		n = withoutFlag(n, FlagMyself)
		for _, v := range views {
			o, ok := v.Node(id)
			if !ok || o.IsMyself() {
				continue
			}
			for _, f := range []string{FlagFail, FlagPFail} {
				if o.HasFlag(f) && !n.HasFlag(f) {
					n.Flags = append(append([]string(nil), n.Flags...), f)
				}
			}
			if o.LinkState == LinkDisconnected {
				n.LinkState = LinkDisconnected
			}
		}
		t.Nodes = append(t.Nodes, n)
	}
	sort.Slice(t.Nodes, func(a, b int) bool {
		if x, y := t.Nodes[a].Addr(), t.Nodes[b].Addr(); x != y {
			return x < y
		}
		return t.Nodes[a].ID < t.Nodes[b].ID
	})
	t.Disagreements = disagreements(views, ids)
	return t
}

func withoutFlag(n Node, f string) Node {
	if !n.HasFlag(f) {
		return n
	}
	var fl []string
	for _, g := range n.Flags {
		if g != f {
			fl = append(fl, g)
		}
	}
	n.Flags = fl
	return n
}

func disagreements(views []View, ids []string) []Disagreement {
	if len(views) < 2 {
		return nil
	}
	fields := []struct {
		name     string
		value    func(Node) string
		skipSelf bool // a node never reports itself failing
	}{
		{"addr", Node.Addr, false},
		{"role", Node.Role, false},
		{"master", func(n Node) string { return n.MasterID }, false},
		{"slots", func(n Node) string { return slotsString(n.Slots) }, false},
		{"config-epoch", func(n Node) string { return strconv.FormatUint(n.ConfigEpoch, 10) }, false},
		{"failing", func(n Node) string {
			switch {
			case n.HasFlag(FlagFail):
				return FlagFail
			case n.HasFlag(FlagPFail):
				return FlagPFail
			}
			return "no"
		}, true},
	}
	var out []Disagreement
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	for _, id := range sorted {
		known := map[string]string{}
		missing := false
		for _, v := range views {
			if _, ok := v.Node(id); ok {
				known[v.Addr] = "yes"
			} else {
				known[v.Addr] = "(absent)"
				missing = true
			}
		}
		if missing {
			out = append(out, Disagreement{NodeID: id, Field: "known", Values: known})
		}
		for _, f := range fields {
			vals := map[string]string{}
			distinct := map[string]bool{}
			for _, v := range views {
				n, ok := v.Node(id)
				if !ok || (f.skipSelf && n.IsMyself()) {
					continue
				}
				s := f.value(n)
				vals[v.Addr] = s
				distinct[s] = true
			}
			if len(distinct) > 1 {
				out = append(out, Disagreement{NodeID: id, Field: f.name, Values: vals})
			}
		}
	}
	return out
}

// slotsString formats ranges as "0-5460,5461" ("" when none).
func slotsString(rs []SlotRange) string {
	norm := normalizeSlots(rs)
	parts := make([]string, len(norm))
	for i, r := range norm {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// normalizeSlots sorts ranges and merges adjacent or overlapping ones.
func normalizeSlots(rs []SlotRange) []SlotRange {
	if len(rs) == 0 {
		return nil
	}
	s := append([]SlotRange(nil), rs...)
	sort.Slice(s, func(a, b int) bool { return s[a].Start < s[b].Start })
	out := []SlotRange{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if r.Start <= last.End+1 {
			if r.End > last.End {
				last.End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// Node returns the merged node with ID id.
func (t *Topology) Node(id string) (Node, bool) {
	for _, n := range t.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// NodeByAddr returns the merged node whose address is addr ("ip:port").
func (t *Topology) NodeByAddr(addr string) (Node, bool) {
	for _, n := range t.Nodes {
		if n.Addr() == addr {
			return n, true
		}
	}
	return Node{}, false
}

// NodeByIP returns the merged node announced at ip, which maps a pod (by its pod IP) to its
// Redis node. IPs are compared as addresses, so "::1" matches "0:0:0:0:0:0:0:1".
func (t *Topology) NodeByIP(ip string) (Node, bool) {
	want := net.ParseIP(ip)
	for _, n := range t.Nodes {
		if n.IP == ip || (want != nil && want.Equal(net.ParseIP(n.IP))) {
			return n, true
		}
	}
	return Node{}, false
}

// Masters returns the merged nodes with the master flag, ordered by their first slot (masters
// without slots last, by address).
func (t *Topology) Masters() []Node {
	var out []Node
	for _, n := range t.Nodes {
		if n.IsMaster() {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := firstSlot(out[a]), firstSlot(out[b])
		return x < y
	})
	return out
}

func firstSlot(n Node) int {
	s := normalizeSlots(n.Slots)
	if len(s) == 0 {
		return NumSlots
	}
	return s[0].Start
}

// MasterOf returns the master of the shard node id belongs to: the node itself when it is a
// master, its master when it is a replica. ok is false when id or its master is unknown.
func (t *Topology) MasterOf(id string) (Node, bool) {
	n, ok := t.Node(id)
	if !ok {
		return Node{}, false
	}
	if n.IsMaster() {
		return n, true
	}
	if n.MasterID == "" {
		return Node{}, false
	}
	return t.Node(n.MasterID)
}

// ReplicasOf returns the merged replicas of masterID, sorted by address.
func (t *Topology) ReplicasOf(masterID string) []Node {
	var out []Node
	for _, n := range t.Nodes {
		if n.IsReplica() && n.MasterID == masterID {
			out = append(out, n)
		}
	}
	return out
}

// View returns the view read from addr.
func (t *Topology) View(addr string) (View, bool) {
	for _, v := range t.Views {
		if v.Addr == addr {
			return v, true
		}
	}
	return View{}, false
}

// SlotOwners returns, for every slot, the ID of the merged master serving it ("" when none),
// skipping masters flagged fail when skipFailed is set.
func (t *Topology) SlotOwners(skipFailed bool) [NumSlots]string {
	var owners [NumSlots]string
	for _, n := range t.Nodes {
		if !n.IsMaster() || (skipFailed && n.HasFlag(FlagFail)) {
			continue
		}
		for _, r := range n.Slots {
			for s := r.Start; s <= r.End; s++ {
				owners[s] = n.ID
			}
		}
	}
	return owners
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
