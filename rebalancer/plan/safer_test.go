package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// quorumExcessOf sums MasterQuorum's excess (masters above the limit, per node and zone) in vs.
func quorumExcessOf(vs []policies.Violation) int {
	sum := 0
	for _, v := range vs {
		if v.Rule == policies.MasterQuorum && !v.Soft {
			sum += v.Count - v.Limit
		}
	}
	return sum
}

// safestByBruteForce returns the least MasterQuorum excess that failovers alone reach from the
// cluster's current placement and masters, and the fewest failovers that reach it: every choice
// of master per shard among the master and its takers, judged by the rules
// (policies.Cluster.EvaluateWith), without the planner's flow.
func safestByBruteForce(c *policies.Cluster) (excess, failovers int) {
	b := bruteForce{c: c}
	s := bfState{c.Current(), c.CurrentMasters()}
	ms := s.ms.Clone()
	excess, failovers = -1, 0
	var rec func(shard, changes int)
	rec = func(shard, changes int) {
		if shard == len(c.Shards) {
			e := quorumExcessOf(c.EvaluateWith(s.p, ms))
			if excess < 0 || e < excess || e == excess && changes < failovers {
				excess, failovers = e, changes
			}
			return
		}
		var masters []int
		for _, j := range c.Shards[shard].Members {
			if s.ms[j] {
				masters = append(masters, j)
			}
		}
		if len(masters) != 1 {
			rec(shard+1, changes)
			return
		}
		m := masters[0]
		rec(shard+1, changes)
		for _, t := range b.takers(s, m) {
			ms[m], ms[t] = false, true
			rec(shard+1, changes+1)
			ms[m], ms[t] = true, false
		}
	}
	rec(0, 0)
	return excess, failovers
}

// TestSaferPlanIsFewestFailovers checks the plans of failovers only (Plan.Partial) against a brute
// force on every random placement for which no plan reaches compliance: where failovers lower
// MasterQuorum's excess, the plan's failovers reach the least excess any choice of masters
// reaches, with the fewest failovers, each step (in the plan's order) lowering the excess or
// keeping it, each promoting a taker of its master's shard; where none lowers it, the plan has no
// move. Enough such placements must be seen for the check to mean something.
func TestSaferPlanIsFewestFailovers(t *testing.T) {
	rps := append(randomPlacements(rand.New(rand.NewPCG(26, 2026)), 240), zonalPlacements(rand.New(rand.NewPCG(27, 2026)), 120)...)
	infeasible, partial, unfixable := 0, 0, 0
	for _, rp := range rps {
		c, err := rp.cluster()
		if err != nil {
			t.Fatal(err)
		}
		p := Compute(c, Options{MaxMoves: rp.limit})
		if p.Infeasible == "" {
			continue
		}
		infeasible++
		before := quorumExcessOf(c.Evaluate(c.Current()))
		want, wantFailovers := safestByBruteForce(c)
		if want >= before {
			if p.Partial != nil || len(p.Moves) > 0 {
				t.Errorf("%s: no failover lowers MasterQuorum's excess %d, yet the plan has %d moves (%+v)", rp.description, before, len(p.Moves), p.Partial)
			}
			continue
		}
		partial++
		if want > 0 {
			unfixable++
		}
		if p.Partial == nil || p.Partial.QuorumBefore != before || p.Partial.QuorumAfter != want || p.Failovers != wantFailovers || p.Evictions != 0 || len(p.Moves) != wantFailovers {
			t.Errorf("%s: partial %+v with %d failovers, %d evictions, %d moves; want MasterQuorum excess %d → %d with %d failovers only", rp.description, p.Partial, p.Failovers, p.Evictions, len(p.Moves), before, want, wantFailovers)
			continue
		}
		// Replay the steps in order.
		cur, ms := c.Current(), c.CurrentMasters()
		last := before
		for k, mv := range p.Moves {
			from, to := mv.Member, mv.FailoverTo
			if mv.Kind != KindFailover || !ms[from] || to < 0 || c.Members[to].ShardIndex != c.Members[from].ShardIndex || ms[to] || cur[to] < 0 {
				t.Errorf("%s: move %d (%s → %s) is not a failover of a master to another member of its shard", rp.description, k+1, mv.From, mv.To)
				break
			}
			ms[from], ms[to] = false, true
			e := quorumExcessOf(c.EvaluateWith(cur, ms))
			if e > last {
				t.Errorf("%s: move %d (%s → %s) raises MasterQuorum's excess %d → %d", rp.description, k+1, mv.From, mv.To, last, e)
			}
			last = e
		}
		if last != want {
			t.Errorf("%s: the failovers end at MasterQuorum excess %d, want %d", rp.description, last, want)
		}
	}
	t.Logf("%d random placements: %d without a plan, %d of them made safer by failovers alone (%d of those without making MasterQuorum hold)", len(rps), infeasible, partial, unfixable)
	if partial < 20 || unfixable < 3 {
		t.Errorf("only %d placements made safer by failovers alone (%d without making MasterQuorum hold), want at least 20 (3): the random placements no longer reach the cases", partial, unfixable)
	}
}
