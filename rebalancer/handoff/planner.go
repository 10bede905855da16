package handoff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
)

// Leaving is what must stop holding masters: nodes being emptied (by name) and members whose
// eviction the guard held (by index in the cluster's Members), each with why.
type Leaving struct {
	// Nodes are the nodes being emptied, by name, and why ("cordoned", "taint ...").
	Nodes map[string]string
	// Members are members whose eviction was held though their node stays, and why.
	Members map[int]string
}

// leaves reports whether member i must stop being a master, and why.
func (l Leaving) leaves(c *policies.Cluster, i int) (string, bool) {
	if why, ok := l.Members[i]; ok {
		return why, true
	}
	m := c.Members[i]
	if m.Node < 0 {
		return "", false
	}
	name := c.Model().Nodes[m.Node].Name
	if why, ok := l.Nodes[name]; ok {
		return fmt.Sprintf("node %s is being emptied (%s)", name, why), true
	}
	return "", false
}

// Planner returns the failovers that take every master serving slots off what is leaving, as
// plan.KindFailover moves (Member, FailoverTo, From, To, ToNode set; the executor's failover step
// reads them), each handing its slots to a replica of its shard on a node that stays, chosen so
// that MasterQuorum holds over the nodes that stay. Plan.Infeasible says why when some master has
// no such replica.
type Planner func(c *policies.Cluster, l Leaving) plan.Plan

// GreedyPlanner is a Planner that hands each master leaving, in member order, to the replica of
// its shard on a node that stays whose node, then zone, holds the fewest masters so far (masters
// that stay counted first), so that no node or zone of those that stay takes more than
// MasterQuorum's limits when any choice keeps them. It moves no master that stays.
func GreedyPlanner(c *policies.Cluster, l Leaving) plan.Plan {
	nodes := c.Model().Nodes
	byNode, byZone := map[int]int{}, map[string]int{}
	masters := c.CurrentMasters()
	var going []int
	for i, is := range masters {
		if !is {
			continue
		}
		if _, ok := l.leaves(c, i); ok {
			going = append(going, i)
			continue
		}
		if n := c.Members[i].Node; n >= 0 {
			byNode[n]++
			byZone[nodes[n].Zone]++
		}
	}
	staying := 0
	for _, n := range nodes {
		if _, ok := l.Nodes[n.Name]; !ok {
			staying++
		}
	}
	q := policies.QuorumFor(masters.Count(), c.Z(), staying)
	p := plan.Plan{Moves: []plan.Move{}, Minimal: true}
	var infeasible []string
	for _, i := range going {
		m := c.Members[i]
		why, _ := l.leaves(c, i)
		best := -1
		score := func(j int) []int {
			n := c.Members[j].Node
			over := 0
			if byNode[n]+1 > q.NodeLimit || q.ZoneLimit > 0 && byZone[nodes[n].Zone]+1 > q.ZoneLimit {
				over = 1
			}
			return []int{over, byNode[n], byZone[nodes[n].Zone]}
		}
		for _, j := range c.Shards[m.ShardIndex].Members {
			r := c.Members[j]
			if j == i || r.Role != policies.RoleReplica || r.Node < 0 || r.Terminating {
				continue
			}
			if _, ok := l.leaves(c, j); ok {
				continue
			}
			if best < 0 || slices.Compare(score(j), score(best)) < 0 {
				best = j
			}
		}
		if best < 0 {
			infeasible = append(infeasible, fmt.Sprintf("master %s (%s) has no replica on a node that stays", m.Key(), why))
			continue
		}
		to := c.Members[best]
		byNode[to.Node]++
		byZone[nodes[to.Node].Zone]++
		p.Moves = append(p.Moves, plan.Move{
			Kind: plan.KindFailover, Member: i, Pod: m.Key(), Node: nodes[m.Node].Name, Shard: m.Shard, Role: policies.RoleMaster,
			Failover: true, From: m.Key(), To: to.Key(), ToNode: nodes[to.Node].Name, FailoverTo: best,
			Candidates: []plan.Candidate{}, CandidateNodes: []string{}, Reason: why,
		})
	}
	p.Failovers = len(p.Moves)
	if len(infeasible) > 0 {
		p.Infeasible = strings.Join(infeasible, "; ")
	}
	return p
}
