package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// bruteForceMinMoves returns the fewest evictions after which c complies, by breadth-first
// search over every placement: a step evicts any StatefulSet pod and the scheduler then places
// each unplaced pod, in any order, on any node that passes the filter (no equivalence classes,
// no lower bound, no move ordering: none of the planner's shortcuts). -1 when none within limit.
func bruteForceMinMoves(c *policies.Cluster, limit int) int {
	key := func(p policies.Placement) string { return fmt.Sprint([]int(p)) }
	var settle func(p policies.Placement, out map[string]policies.Placement)
	settle = func(p policies.Placement, out map[string]policies.Placement) {
		placedAny := false
		for i, n := range p {
			if n >= 0 || c.Members[i].Terminating {
				continue
			}
			for node := range c.Model().Nodes {
				if ok, _ := c.Fits(p, i, node); ok {
					next := p.Clone()
					next[i] = node
					placedAny = true
					settle(next, out)
				}
			}
		}
		if !placedAny {
			out[key(p)] = p
		}
	}
	start := map[string]policies.Placement{}
	settle(c.Current(), start)
	frontier := start
	seen := map[string]bool{}
	for depth := 0; depth <= limit; depth++ {
		next := map[string]policies.Placement{}
		for k, p := range frontier {
			if seen[k] {
				continue
			}
			seen[k] = true
			if c.Compliant(p) {
				return depth
			}
			for i, n := range p {
				if n < 0 || c.Shards[c.Members[i].ShardIndex].StatefulSet == nil {
					continue
				}
				ev := p.Clone()
				ev[i] = -1
				after := map[string]policies.Placement{}
				settle(ev, after)
				for k2, q := range after {
					if q[i] >= 0 { // the evicted pod must come back
						next[k2] = q
					}
				}
			}
		}
		frontier = next
	}
	return -1
}

// TestPlanIsMinimal checks the planner's move count against the brute-force search on every
// small case of the suite (and a few variants), and that a plan exists exactly when one does.
func TestPlanIsMinimal(t *testing.T) {
	for _, c := range scenario.Suite() {
		if c.N() > 10 || c.Name == "zonal-volumes" { // zonal-volumes: covered by TestExamples; too slow here
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			snap, err := c.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
			if err != nil {
				t.Fatal(err)
			}
			cl := m.Clusters[0]
			want := bruteForceMinMoves(cl, 3)
			plan := Compute(cl, Options{MaxMoves: 3})
			got := len(plan.Moves)
			if !plan.CompliantAfter {
				got = -1
			}
			if got != want {
				t.Errorf("planner: %d moves (infeasible %q), brute force: %d", got, plan.Infeasible, want)
			}
			if got >= 0 && !plan.Minimal {
				t.Errorf("plan not marked minimal")
			}
		})
	}
}

// TestPlanIsMinimalRandom compares the planner with the brute-force search on random placements
// of small clusters (fixed seed): 3 shards × 2 pods on 3 zones × 2 nodes, and 4 shards × 2 pods
// on one zone of 5 nodes, with pods stacked at random (some Pending).
func TestPlanIsMinimalRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []scenario.Scenario{
		{Zones: scenario.ThreeZones(), Shards: 3, PodsPerShard: 2},
		{Zones: []scenario.Zone{{Name: "zone-a", Nodes: []string{"n1", "n2", "n3", "n4", "n5"}}}, Shards: 4, PodsPerShard: 2},
		{Zones: scenario.ThreeZones(), Shards: 4, PodsPerShard: 2},
	}
	multi := 0
	for k := 0; k < 60; k++ {
		sc := shapes[k%len(shapes)]
		sc.Name = fmt.Sprintf("random-%d", k)
		sc.RoleLabels = true
		nodes := sc.NodeNames()
		sc.Placement = map[string]string{}
		for i := 0; i < sc.Shards; i++ {
			for o := 0; o < sc.PodsPerShard; o++ {
				if rng.IntN(10) == 0 && o > 0 {
					continue // Pending
				}
				// Bias towards the first nodes so that rules break.
				sc.Placement[sc.PodName(i, o)] = nodes[min(rng.IntN(len(nodes)), rng.IntN(len(nodes)))]
			}
		}
		m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
		if err != nil {
			t.Fatal(err)
		}
		cl := m.Clusters[0]
		want := bruteForceMinMoves(cl, 3)
		plan := Compute(cl, Options{MaxMoves: 3})
		got := len(plan.Moves)
		if !plan.CompliantAfter {
			got = -1
		}
		if want >= 2 {
			multi++
		}
		if got != want {
			t.Errorf("%s %v: planner %d moves (infeasible %q), brute force %d", sc.Name, sc.Placement, got, plan.Infeasible, want)
		}
	}
	t.Logf("%d of 60 random placements need 2 or more moves", multi)
}
