package plan

import (
	"slices"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Always safer: where no plan reaches compliance (no placement the evictions reach complies, or
// the search found none), Redis availability does not wait for placement compliance. Failovers
// move no pod, so they can make MasterQuorum hold (or come closer) on any placement: the planner
// still plans the fewest of them that lower its violations the most, and the executor carries
// them out with the same gates as any failover step.

// saferPlan fills plan, which reaches no compliance and is not a best-effort plan, with the
// failover steps that make Redis safer from the current placement: the fewest failovers after
// which MasterQuorum's excess is the least that failovers alone reach
// (policies.State.SafestFailovers), in an order in which no step raises the excess
// (quorumOrder). Plan.Partial says what they do. Nothing when no failover lowers the excess.
func (pl *planner) saferPlan(plan *Plan) {
	st := pl.st
	before := st.QuorumExcessSum()
	fix, after := st.SafestFailovers()
	if len(fix) == 0 || after >= before {
		return
	}
	o := outcome{start: step{member: -1, to: -1}, fix: pl.quorumOrder(fix)}
	plan.Moves = pl.moves(o)
	plan.Failovers = len(o.fix)
	final, masters := pl.replay(o)
	plan.After = pl.c.EvaluateWith(final, masters)
	plan.Partial = &Partial{QuorumBefore: before, QuorumAfter: after}
}

// quorumOrder returns fix in the order the executor carries it out, one failover at a time: at
// each step the failover after which MasterQuorum's excess is the lowest (the first of fix's
// order among equals), so that a failover that makes room on a node or zone comes before the one
// that needs it. The state is left as it was.
func (pl *planner) quorumOrder(fix []policies.Failover) []policies.Failover {
	st := pl.st
	rest := slices.Clone(fix)
	out := make([]policies.Failover, 0, len(fix))
	for len(rest) > 0 {
		best, bestExcess := 0, -1
		for i, f := range rest {
			st.Failover(f.From, f.To)
			if e := st.QuorumExcessSum(); bestExcess < 0 || e < bestExcess {
				best, bestExcess = i, e
			}
			st.Failover(f.To, f.From)
		}
		f := rest[best]
		st.Failover(f.From, f.To)
		out = append(out, f)
		rest = slices.Delete(rest, best, best+1)
	}
	for k := len(out) - 1; k >= 0; k-- {
		st.Failover(out[k].To, out[k].From)
	}
	return out
}
