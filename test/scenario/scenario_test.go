package scenario_test

import (
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestTwoMoves checks what the e2e window test relies on: TwoMoves breaks hard rules on n1 and
// n3, and its minimal plan is two evictions, one off each node, and no failover step.
func TestTwoMoves(t *testing.T) {
	sc := scenario.TwoMoves()
	sc.RoleLabels = true
	m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	nodes := map[string]bool{}
	for _, v := range policies.Hard(c.Evaluate(c.Current())) {
		nodes[v.Domain] = true
	}
	if !nodes["n1"] || !nodes["n3"] {
		t.Errorf("hard violations on %v, want n1 and n3", nodes)
	}
	p := plan.Compute(c, plan.Options{})
	if p.Infeasible != "" || !p.Minimal || len(p.Moves) != 2 || p.Evictions != 2 || p.Failovers != 0 {
		t.Fatalf("plan: %d moves (%d evictions, %d failovers), minimal %v, infeasible %q; want a minimal plan of 2 evictions",
			len(p.Moves), p.Evictions, p.Failovers, p.Minimal, p.Infeasible)
	}
	from := map[string]bool{}
	for _, mv := range p.Moves {
		if mv.Kind != plan.KindEvict {
			t.Errorf("move %s: kind %q, want %q", mv.Pod, mv.Kind, plan.KindEvict)
		}
		from[mv.Node] = true
	}
	if !from["n1"] || !from["n3"] {
		t.Errorf("moves from %v, want one off n1 and one off n3", from)
	}
}
