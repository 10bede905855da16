package bench

import (
	"runtime"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// The cost gate: the planner's work on the scale benchmark's snapshot, scaled down to a fifth
// (synth.Scaled(0.2), seed 1: 1,000 nodes in 3 zones, 30,000 pods, 200 Redis clusters, 39 of them
// non-compliant, each planned once), counted in units that do not depend on the machine's speed
// (policies.Work: the nodes the counts before the search visit, the filter's node checks, the
// placements searched) and in bytes allocated. The budgets are the counts measured when they
// were last set (219,000 node visits, 72,209 filter checks, 22,871 placements; 13.7 MB since the
// planner recycles its per-node arrays (node classes, its state's counts, the basis of the
// spread counts) and the TopologySpread rule its per-domain counts, 15.6 MB before, 28.5 MB
// before the planner reused its scratch (Evaluate's grouping, the flow's queue, the search's
// lists) and kept only the node names a Pending pod's diagnosis shows), plus a quarter: a change that multiplies the work fails `make test` (the TopologySpread counts'
// first form, which visited every node for every member in maps that grew with them, counts
// 4,040,000 node visits and allocates 154 MB here); a change that lowers it should lower the
// budget too (the test logs the figures).
var (
	planWorkBudget = policies.Work{NodeVisits: 275_000, FilterChecks: 90_300, Searched: 28_600}
	// planBytesBudget bounds the bytes the plans allocate (runtime.MemStats.TotalAlloc), the model
	// built before them left out.
	planBytesBudget uint64 = 17_100_000
)

// TestPlanWorkBudget plans every non-compliant cluster of the cost gate's snapshot one after
// the other (so that the bytes allocated are the plans' own) and fails when a count exceeds its
// budget.
func TestPlanWorkBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the cost gate builds a 30,000-pod snapshot")
	}
	snap := synth.Generate(synth.Scaled(0.2))
	m, err := policies.Build(snap, PolicyOptions())
	if err != nil {
		t.Fatal(err)
	}
	var todo []*policies.Cluster
	for _, c := range m.Clusters {
		if len(policies.Hard(c.Evaluate(c.Current()))) > 0 {
			todo = append(todo, c)
		}
	}
	var work policies.Work
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, c := range todo {
		work.Add(plan.Compute(c, plan.Options{}).Work)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d clusters planned: %d node visits (budget %d), %d filter checks (budget %d), %d placements searched (budget %d), %d bytes allocated (budget %d)",
		len(todo), work.NodeVisits, planWorkBudget.NodeVisits, work.FilterChecks, planWorkBudget.FilterChecks, work.Searched, planWorkBudget.Searched, allocated, planBytesBudget)
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"node visits", uint64(work.NodeVisits), uint64(planWorkBudget.NodeVisits)},
		{"filter checks", uint64(work.FilterChecks), uint64(planWorkBudget.FilterChecks)},
		{"placements searched", uint64(work.Searched), uint64(planWorkBudget.Searched)},
		{"bytes allocated", allocated, planBytesBudget},
	} {
		if c.got > c.want {
			t.Errorf("%s: %d, over the budget of %d: the planner does more work than when the budget was set (see the figures above; profile BenchmarkPlan)", c.what, c.got, c.want)
		}
	}
}
