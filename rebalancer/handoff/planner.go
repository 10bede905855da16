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
// reads them) in the order to carry them out. Plan.Infeasible says why when some master has no
// replica to hand off to.
type Planner func(c *policies.Cluster, l Leaving) plan.Plan

// DrainPlanner is the default Planner. For the nodes being emptied it is plan.HandOff: the fewest
// failovers that take every master off them while MasterQuorum holds over the nodes that stay
// (masters on staying nodes that must make room first). A held master on a node that stays, and
// still a master after those moves, then goes to its replica chosen as GreedyMembers does.
func DrainPlanner(c *policies.Cluster, l Leaving) plan.Plan {
	p := plan.Plan{Moves: []plan.Move{}, Minimal: true}
	var infeasible []string
	planned := map[int]bool{}
	if len(l.Nodes) > 0 {
		names := make([]string, 0, len(l.Nodes))
		for n := range l.Nodes {
			names = append(names, n)
		}
		leaving, err := c.Model().LeavingNodes(names, "")
		if err != nil {
			// A node the observation does not hold (deleted since) empties nothing.
			leaving = make(policies.Leaving, len(c.Model().Nodes))
			for _, n := range names {
				if i := c.Model().NodeIndex(n); i >= 0 {
					leaving[i] = true
				}
			}
		}
		h := plan.HandOff(c, leaving)
		for _, mv := range h.Moves {
			if why, ok := l.leaves(c, mv.Member); ok {
				mv.Reason = why + "; " + mv.Reason
			}
			planned[mv.Member] = true
			p.Moves = append(p.Moves, mv)
		}
		for _, pod := range h.Stuck {
			infeasible = append(infeasible, fmt.Sprintf("master %s has no replica on a node that stays", pod))
		}
	}
	held := Leaving{Members: map[int]string{}}
	for i, why := range l.Members {
		if !planned[i] {
			held.Members[i] = why
		}
	}
	if len(held.Members) > 0 {
		g := GreedyMembers(c, held, l)
		p.Moves = append(p.Moves, g.Moves...)
		if g.Infeasible != "" {
			infeasible = append(infeasible, g.Infeasible)
		}
	}
	p.Failovers = len(p.Moves)
	p.Infeasible = strings.Join(infeasible, "; ")
	return p
}

// GreedyMembers hands each master of held (its Members; its Nodes are not read), in member order,
// to the replica of its shard, on a node all does not mark leaving nor the model (Node.Leaving),
// and not itself leaving, whose
// node, then zone, holds the fewest masters so far (the masters that stay counted first): those
// above MasterQuorum's limits last. It moves no other master.
func GreedyMembers(c *policies.Cluster, held, all Leaving) plan.Plan {
	nodes := c.Model().Nodes
	byNode, byZone := map[int]int{}, map[string]int{}
	masters := c.CurrentMasters()
	var going []int
	for i, is := range masters {
		if !is {
			continue
		}
		if _, ok := held.Members[i]; ok {
			going = append(going, i)
			continue
		}
		if n := c.Members[i].Node; n >= 0 {
			byNode[n]++
			byZone[nodes[n].Zone]++
		}
	}
	q := c.MasterQuorum()
	p := plan.Plan{Moves: []plan.Move{}, Minimal: true}
	var infeasible []string
	for _, i := range going {
		m := c.Members[i]
		why := held.Members[i]
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
			if _, ok := all.leaves(c, j); ok || nodes[r.Node].Leaving != "" {
				continue // a node being emptied (also one not Ready) is never a failover target
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
		node := ""
		if m.Node >= 0 {
			node = nodes[m.Node].Name
		}
		p.Moves = append(p.Moves, plan.Move{
			Kind: plan.KindFailover, Member: i, Pod: m.Key(), Node: node, Shard: m.Shard, Role: policies.RoleMaster,
			Failover: true, From: m.Key(), To: to.Key(), ToNode: nodes[to.Node].Name, FailoverTo: best,
			Candidates: []plan.Candidate{}, CandidateNodes: []string{}, Reason: why,
		})
	}
	p.Failovers = len(p.Moves)
	p.Infeasible = strings.Join(infeasible, "; ")
	return p
}
