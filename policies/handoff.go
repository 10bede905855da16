package policies

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Nodes that leave: a drain (`kubectl drain` of a node or of every node of a zone, a node-pool
// upgrade, a consolidation) empties them, and every master serving slots on them should hand its
// slots to an in-sync replica on a node that stays before its pod is evicted, chosen so that
// MasterQuorum holds over the nodes that stay (a failover moves no pod; Redis's own promotion
// after the eviction would pick any replica, and the writes to the master's slots would fail
// until it did).

// Leaving marks nodes by index (Model.Nodes): the nodes a drain empties.
type Leaving []bool

// LeavingNodes returns the model's nodes named in names and, when zone is not "", every node of
// that zone (Node.Zone), as Leaving. It fails when a name is not a node of the model, or the zone
// holds no node, naming them.
func (m *Model) LeavingNodes(names []string, zone string) (Leaving, error) {
	out := make(Leaving, len(m.Nodes))
	var unknown []string
	for _, n := range names {
		i := m.NodeIndex(n)
		if i < 0 {
			unknown = append(unknown, n)
			continue
		}
		out[i] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("no node %s in the cluster", strings.Join(unknown, ", "))
	}
	if zone != "" {
		found := false
		for _, n := range m.Nodes {
			if n.Zone == zone {
				out[n.Index], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("no node in zone %q", zone)
		}
	}
	return out, nil
}

// Names returns the names of the nodes marked, sorted.
func (l Leaving) Names(m *Model) []string {
	var out []string
	for i, is := range l {
		if is {
			out = append(out, m.Nodes[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

// HandOff is what taking every master serving slots off the leaving nodes asks of one cluster:
// the failovers, and MasterQuorum over the nodes that stay.
type HandOff struct {
	// Failovers are the fewest changes of master (Failover: From hands its slots to To, a member
	// of its shard on a node that stays) after which no master serving slots runs on a leaving
	// node and MasterQuorum holds over the nodes that stay, when that is possible; otherwise the
	// fewest after which the fewest masters stay on leaving nodes (Stuck) and the fewest exceed
	// Quorum's limits (QuorumExcess). Sorted by From. A master on a staying node is failed over
	// too when the masters coming off the leaving nodes need its room.
	Failovers []Failover
	// Quorum is what MasterQuorum asks over the nodes that stay: M unchanged (a failover moves a
	// master within its shard), the node limit counted over the nodes that stay, and the zone
	// limit over the allowed zones that keep a node (a zone drained of every node counts as lost).
	Quorum Quorum
	// QuorumExcess is the number of masters above Quorum's limits after the failovers (nodes and
	// zones summed): 0 when MasterQuorum holds over the nodes that stay, or does not apply.
	QuorumExcess int
	// Stuck are the masters on leaving nodes (Member indexes, sorted) that no promotable member of
	// their shard on a node that stays can take over from: their slots go down when their pods are
	// evicted, until Redis promotes a replica that comes back.
	Stuck []int
}

// HandOff returns what taking every master off the leaving nodes asks of the cluster with its
// current placement and roles (State.HandOff on a new State).
func (c *Cluster) HandOff(leaving Leaving) HandOff {
	return c.NewState(c.Current()).HandOff(leaving)
}

// HandOff returns the fewest failovers that take every master serving slots off the leaving nodes
// while MasterQuorum holds over the nodes that stay (HandOff's fields), under the state's
// placement and masters. It is QuorumFix's min-cost flow with the leaving nodes' members barred
// from being master and Quorum's limits counted over the nodes that stay; when no failovers
// satisfy both, the limits may be exceeded at a cost above any number of failovers, and a master
// with no member to go to stays at a cost above any excess. With roles unknown (MasterQuorum
// does not apply), no master is known: nothing is handed off.
func (st *State) HandOff(leaving Leaving) HandOff {
	c := st.c
	m := st.masters.Count()
	h := HandOff{Quorum: c.quorumOver(m, leaving)}
	if !h.Quorum.Applies {
		return h
	}
	r := st.fewestFailovers(h.Quorum, leaving, true)
	h.Failovers, h.Stuck, h.QuorumExcess = r.failovers, r.stuck, r.excess
	return h
}

// quorumOver returns what MasterQuorum asks of m masters over the nodes that stay: the nodes
// quorumNodes counts but the leaving ones, and the allowed zones but those whose every counted
// node leaves.
func (c *Cluster) quorumOver(m int, leaving Leaving) Quorum {
	if !c.RolesKnown() {
		return c.quorumOf(m)
	}
	runs := make([]bool, len(c.model.Nodes))
	for _, mem := range c.Members {
		if mem.Node >= 0 && !mem.Terminating {
			runs[mem.Node] = true
		}
	}
	had, has := map[string]bool{}, map[string]bool{}
	nodes := 0
	for n := range c.model.Nodes {
		z := c.zoneID[n]
		if !(c.allowedID[z] || !c.ZoneList) || !(runs[n] || c.isUsable(n)) {
			continue
		}
		name := c.zones[n]
		had[name] = true
		if n < len(leaving) && leaving[n] {
			continue
		}
		nodes++
		has[name] = true
	}
	zones := c.Z()
	for name := range had {
		if !has[name] && slices.Contains(c.AllowedZones, name) {
			zones--
		}
	}
	return QuorumFor(m, zones, nodes)
}

// Without returns a copy of snap without the named nodes: the cluster as it would be with them
// gone (drained for maintenance, or lost). Only the node list is copied; every object is shared.
// Pods bound to those nodes stay: Build places them nowhere (Member.Node -1), and MarkLost tells
// the planner that their controller re-creates them.
func (s *Snapshot) Without(nodes []string) *Snapshot {
	gone := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		gone[n] = true
	}
	out := *s
	out.Nodes = make([]*corev1.Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		if !gone[n.Name] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	return &out
}

// MarkLost marks the members bound to a node the model does not hold (Snapshot.Without) as lost
// with their node: their controller re-creates them from their template, so the planner places
// them again where the filter lets it, and one that fits no node stays Pending as Unschedulable
// (Member.Unschedulable is set). Their Redis role is what the caller says (a master handed off
// first is a replica). It returns their indexes, in order; call it before the cluster is read.
func (c *Cluster) MarkLost() []int {
	var out []int
	for i, mem := range c.Members {
		if mem.Node < 0 && !mem.Terminating && mem.Pod.Spec.NodeName != "" {
			mem.Unschedulable = true
			out = append(out, i)
		}
	}
	return out
}
