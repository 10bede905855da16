package plan

import (
	"fmt"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// HandOffPlan is what a drain of some nodes asks of one Redis cluster before its first eviction:
// the failover steps that take every master serving slots off the leaving nodes while MasterQuorum
// holds over the nodes that stay (policies.State.HandOff), as Moves the executor carries out.
type HandOffPlan struct {
	// Moves are the failover steps (KindFailover, From/To named, no pod moves), in the order to
	// carry them out: first the masters on nodes that stay that make room (MasterQuorum over the
	// nodes that stay), then the masters on leaving nodes, so that no step leaves a node or zone
	// above its limit while the next is pending. Empty when no master runs on a leaving node and
	// MasterQuorum holds over the nodes that stay.
	Moves []Move `json:"moves"`
	// Quorum is what MasterQuorum asks over the nodes that stay (policies.HandOff.Quorum).
	Quorum policies.Quorum `json:"masterQuorum"`
	// QuorumHolds reports whether MasterQuorum holds over the nodes that stay after the moves (or
	// does not apply).
	QuorumHolds bool `json:"quorumHolds"`
	// Stuck are the masters ("namespace/name") on leaving nodes that no replica of their shard on
	// a node that stays can take over from: evicting them fails their slots' writes until Redis
	// promotes a replica.
	Stuck []string `json:"stuck,omitempty"`
}

// Done reports whether the drain needs nothing more of the cluster: no move, no master stuck on a
// leaving node, and MasterQuorum holding over the nodes that stay.
func (h HandOffPlan) Done() bool { return len(h.Moves) == 0 && len(h.Stuck) == 0 && h.QuorumHolds }

// Unsafe says why a drain of the leaving nodes is not safe to start once the moves are carried
// out ("" when it is): masters stuck on leaving nodes, or MasterQuorum broken over the nodes that
// stay.
func (h HandOffPlan) Unsafe() string {
	var parts []string
	if len(h.Stuck) > 0 {
		parts = append(parts, fmt.Sprintf("no replica on a node that stays can take over from master %s: the drain would evict a master serving slots and fail its writes until Redis promotes a replica", strings.Join(h.Stuck, ", ")))
	}
	if !h.QuorumHolds {
		parts = append(parts, fmt.Sprintf("no failovers keep MasterQuorum over the nodes that stay (%s): losing another node during the drain could take the whole cluster down", quorumText(h.Quorum)))
	}
	return strings.Join(parts, "; ")
}

// quorumText is the limits of q in words.
func quorumText(q policies.Quorum) string {
	if q.ZoneLimit > 0 {
		return fmt.Sprintf("at most %d of the %d masters per node and %d per zone", q.NodeLimit, q.Masters, q.ZoneLimit)
	}
	return fmt.Sprintf("at most %d of the %d masters per node", q.NodeLimit, q.Masters)
}

// HandOff returns the hand-off plan of cluster c, with its current placement and roles, for a
// drain of the leaving nodes (policies.Cluster.HandOff). With the roles unknown nothing is known
// to be a master: the plan is empty and QuorumHolds true (MasterQuorum does not apply).
func HandOff(c *policies.Cluster, leaving policies.Leaving) HandOffPlan {
	h := c.HandOff(leaving)
	out := HandOffPlan{Moves: []Move{}, Quorum: h.Quorum, QuorumHolds: h.QuorumExcess == 0}
	nodes := c.Model().Nodes
	gone := func(j int) bool { n := c.Members[j].Node; return n >= 0 && n < len(leaving) && leaving[n] }
	limits := quorumText(h.Quorum)
	var room, off []Move
	for _, f := range h.Failovers {
		mem, to := c.Members[f.From], c.Members[f.To]
		mv := Move{
			Kind: KindFailover, Member: f.From, Pod: mem.Key(), Node: nodes[mem.Node].Name,
			Shard: mem.Shard, Role: policies.RoleMaster, Failover: true,
			From: mem.Key(), To: to.Key(), FailoverTo: f.To, ToNode: nodes[to.Node].Name,
			Candidates: []Candidate{}, CandidateNodes: []string{},
		}
		if gone(f.From) {
			mv.Reason = fmt.Sprintf("master on %s, which the drain empties; MasterQuorum over the nodes that stay: %s", mv.Node, limits)
			off = append(off, mv)
		} else {
			mv.Reason = fmt.Sprintf("keeps MasterQuorum over the nodes that stay (%s) once the masters leave the drained nodes", limits)
			room = append(room, mv)
		}
	}
	out.Moves = append(append(out.Moves, room...), off...)
	for _, j := range h.Stuck {
		out.Stuck = append(out.Stuck, c.Members[j].Key())
	}
	return out
}
