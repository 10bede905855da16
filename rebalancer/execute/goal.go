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

// Compliance is run's goal: every hard rule holds, and, while opts.SoftEvictions allows soft
// evictions, the enabled soft rules too as far as evictions that keep the hard rules can bring
// them; the plan is the fewest evictions, then failovers, that reach it (plan.Compute).
type Compliance struct {
	// Memo, when set, keeps each cluster's plan for as long as the cluster observed is the same
	// object (serve's watched cache hands out the same one while neither its namespace's objects
	// nor its Redis roles change), so that a pass plans only the clusters that changed. nil:
	// every call plans.
	Memo *plan.Memo
}

// Next is done when c's current placement breaks no hard rule and either no soft eviction is
// left (opts.SoftEvictions) or no soft rule is broken or no soft eviction lowers the soft
// violations; it plans with plan.Compute otherwise.
func (g Compliance) Next(c *policies.Cluster, opts plan.Options) (plan.Plan, bool) {
	now := c.Evaluate(c.Current())
	hardHolds := len(policies.Hard(now)) == 0
	if hardHolds && (opts.SoftEvictions == 0 || policies.SoftExcess(now) == 0) {
		if g.Memo != nil {
			g.Memo.Forget(c.Key())
		}
		return plan.Plan{}, true
	}
	var p plan.Plan
	if g.Memo != nil {
		p = g.Memo.Compute(c, opts)
	} else {
		p = plan.Compute(c, opts)
	}
	if hardHolds && len(p.Moves) == 0 {
		return plan.Plan{}, true // no soft eviction lowers the soft violations
	}
	return p, false
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
