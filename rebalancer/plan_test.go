package rebalancer

import (
	"encoding/json"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

func TestPlanScenarios(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sc        scenario.Scenario
		wantMoves int
		wantPods  []string // when set, the exact pods to move, in order
	}{
		{name: "post-scale-down N=10, n1 holds 4 masters → 1 move", sc: scenario.PostScaleDown(), wantMoves: 1},
		{name: "seed deadlock → evict shard 1's replica on n2", sc: scenario.SeedDeadlock(), wantMoves: 1, wantPods: []string{"redis/redis-s1-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.sc
			sc.RoleLabels = true
			m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
			if err != nil {
				t.Fatal(err)
			}
			plan := PlanCluster(m.Clusters[0], PlanOptions{})
			b, _ := json.MarshalIndent(plan, "", "  ")
			t.Logf("%s", b)
			if !plan.CompliantAfter || !plan.Minimal {
				t.Fatalf("compliantAfter=%v minimal=%v, want both", plan.CompliantAfter, plan.Minimal)
			}
			if len(plan.Moves) != tc.wantMoves {
				t.Fatalf("moves = %d, want %d", len(plan.Moves), tc.wantMoves)
			}
			for k, want := range tc.wantPods {
				if plan.Moves[k].Pod != want {
					t.Errorf("move %d evicts %s, want %s", k, plan.Moves[k].Pod, want)
				}
			}
		})
	}
}
