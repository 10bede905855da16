package execute

import (
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
)

// Goal is what a run works toward, cluster by cluster (Config.Goal): the executor observes a
// cluster, asks the goal whether it is done and, if not, for the plan whose first move it carries
// out, then observes again and asks again.
type Goal interface {
	// Next returns the plan of cluster c as observed now (its first move is carried out next),
	// or done when the goal is reached and the cluster needs no further move. opts are the
	// planner's bounds.
	Next(c *policies.Cluster, opts plan.Options) (p plan.Plan, done bool)
}

// Compliance is run's goal: every hard rule holds; the plan is the fewest evictions, then
// failovers, that reach it (plan.Compute).
type Compliance struct{}

// Next is done when c's current placement breaks no hard rule, and plans with plan.Compute
// otherwise.
func (Compliance) Next(c *policies.Cluster, opts plan.Options) (plan.Plan, bool) {
	if len(policies.Hard(c.Evaluate(c.Current()))) == 0 {
		return plan.Plan{}, true
	}
	return plan.Compute(c, opts), false
}

// HandOff is prepare-drain's goal: no master serving slots on the nodes named, with MasterQuorum
// holding over the nodes that stay; the plan is the hand-off's failover steps (plan.HandOff), one
// at a time, re-planned after each. A cluster is done when its hand-off has no move left, whether
// or not it is safe (masters stuck, MasterQuorum broken over the nodes that stay): the caller
// judges that from a fresh observation. Nodes no longer in the cluster are gone already.
type HandOff struct {
	// Nodes are the names of the nodes a drain is about to empty.
	Nodes []string
}

// Next is done when the hand-off of the nodes from c's current placement and roles has no move.
func (h HandOff) Next(c *policies.Cluster, _ plan.Options) (plan.Plan, bool) {
	m := c.Model()
	leaving := make(policies.Leaving, len(m.Nodes))
	for _, n := range h.Nodes {
		if i := m.NodeIndex(n); i >= 0 {
			leaving[i] = true
		}
	}
	ho := plan.HandOff(c, leaving)
	if len(ho.Moves) == 0 {
		return plan.Plan{}, true
	}
	p := plan.Plan{
		Moves: ho.Moves, Failovers: len(ho.Moves), Before: c.Evaluate(c.Current()),
		CompliantAfter: ho.Unsafe() == "", Minimal: true, FailoversMinimal: true,
	}
	return p, false
}
