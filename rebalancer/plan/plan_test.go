package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

func TestPlanScenarios(t *testing.T) {
	for _, tc := range []struct {
		name          string
		sc            scenario.Scenario
		wantMoves     int      // evictions
		wantFailovers int      // failover steps
		wantPods      []string // when set, the exact pods to move, in order
	}{
		{name: "post-scale-down N=10, n1 holds 4 of 5 masters, zone-a 5 → 1 eviction (a master of n1), 2 failovers", sc: scenario.PostScaleDown(), wantMoves: 1, wantFailovers: 2},
		{name: "seed deadlock → evict shard 1's replica on n2", sc: scenario.SeedDeadlock(), wantMoves: 1, wantPods: []string{"redis/redis-s1-1"}},
		{name: "role only: pods compliant, n1 holds 3 of 5 masters → 0 evictions, 1 failover", sc: scenario.RoleOnly(), wantFailovers: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.sc
			sc.RoleLabels = true
			m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
			if err != nil {
				t.Fatal(err)
			}
			plan := Compute(m.Clusters[0], Options{})
			b, _ := json.MarshalIndent(plan, "", "  ")
			t.Logf("%s", b)
			if !plan.CompliantAfter || !plan.Minimal || !plan.FailoversMinimal {
				t.Fatalf("compliantAfter=%v minimal=%v failoversMinimal=%v, want all", plan.CompliantAfter, plan.Minimal, plan.FailoversMinimal)
			}
			if plan.Evictions != tc.wantMoves || plan.Failovers != tc.wantFailovers || len(plan.Moves) != tc.wantMoves+tc.wantFailovers {
				t.Fatalf("evictions %d, failovers %d, moves %d; want %d evictions and %d failovers", plan.Evictions, plan.Failovers, len(plan.Moves), tc.wantMoves, tc.wantFailovers)
			}
			for k, mv := range plan.Moves {
				if want := map[bool]string{true: KindEvict, false: KindFailover}[k < tc.wantMoves]; mv.Kind != want {
					t.Errorf("move %d is a %s, want a %s (evictions first)", k, mv.Kind, want)
				}
			}
			for k, want := range tc.wantPods {
				if plan.Moves[k].Pod != want {
					t.Errorf("move %d evicts %s, want %s", k, plan.Moves[k].Pod, want)
				}
			}
		})
	}
}

// stacked returns N=12 (6 shards × 2) on three zones of two nodes with shards 0–3 entirely on n1
// and shards 4–5 spread: n1 holds 8 pods where 3 are allowed, so at least 5 moves are needed.
func stacked(t *testing.T) *policies.Cluster {
	t.Helper()
	sc := scenario.Scenario{Name: "stacked", Zones: scenario.ThreeZones(), Shards: 6, PodsPerShard: 2, RoleLabels: true}
	sc.Placement = map[string]string{}
	for i := 0; i < 4; i++ {
		sc.Placement[sc.PodName(i, 0)] = "n1"
		sc.Placement[sc.PodName(i, 1)] = "n1"
	}
	sc.Placement[sc.PodName(4, 0)], sc.Placement[sc.PodName(4, 1)] = "n3", "n5"
	sc.Placement[sc.PodName(5, 0)], sc.Placement[sc.PodName(5, 1)] = "n4", "n6"
	m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	return m.Clusters[0]
}

func TestPlanMoveLimit(t *testing.T) {
	c := stacked(t)
	t.Run("limit 4 below the lower bound 5 → no plan, says at least 5 evictions", func(t *testing.T) {
		plan := Compute(c, Options{MaxMoves: 4})
		if len(plan.Moves) != 0 || plan.CompliantAfter || !strings.Contains(plan.Infeasible, "at least 5 evictions are needed (5 pods above the per-node limit") {
			t.Fatalf("moves %d, compliantAfter %v, infeasible %q; want no plan because at least 5 evictions are needed", len(plan.Moves), plan.CompliantAfter, plan.Infeasible)
		}
	})
	t.Run("default limit → a proven minimal plan of 5 moves, every move with an on-track candidate", func(t *testing.T) {
		plan := Compute(c, Options{})
		if !plan.CompliantAfter || !plan.Minimal || plan.Evictions != 5 {
			t.Fatalf("evictions %d, compliantAfter %v, minimal %v, infeasible %q; want 5 evictions, compliant, minimal", plan.Evictions, plan.CompliantAfter, plan.Minimal, plan.Infeasible)
		}
		for k, mv := range plan.Moves[:plan.Evictions] {
			expected := false
			for _, cand := range mv.Candidates {
				if cand.Node == mv.Expected {
					expected = cand.OnTrack
				}
			}
			if !expected {
				t.Errorf("move %d (%s → %s): the expected node is not an on-track candidate: %+v", k, mv.Pod, mv.Expected, mv.Candidates)
			}
		}
	})
}

// TestNoPlanSaysWhy checks that an answer without a plan names what stopped the search, under
// which model, and never claims more than was searched.
func TestNoPlanSaysWhy(t *testing.T) {
	build := func(sc scenario.Scenario) *policies.Cluster {
		sc.RoleLabels = true
		m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
		if err != nil {
			t.Fatal(err)
		}
		return m.Clusters[0]
	}
	tooFew := scenario.TooFewNodes()
	for _, tc := range []struct {
		name        string
		c           *policies.Cluster
		opts        Options
		wantMoves   int
		wantMinimal bool
		limitedBy   string
		want        []string // phrases of Infeasible
		alternative int      // WithPendingSteps.Moves, 0 for none
	}{
		{name: "N=6 on 5 nodes → static", c: build(tooFew.Scenario), limitedBy: LimitStatic, want: []string{"need 6 usable nodes, found 5"}},
		{name: "lower bound 5 above --max-plan-moves 4 → maxMoves", c: stacked(t), opts: Options{MaxMoves: 4}, limitedBy: LimitMaxMoves,
			want: []string{"at least 5 evictions are needed (5 pods above the per-node limit, one eviction each), more than the longest plan considered (4 moves"}},
		{name: "search budget of 1 placement → the greedy plan, not proven minimal", c: stacked(t), opts: Options{MaxStates: 1}, wantMoves: 5},
		{name: "Pending-step case → every single eviction leaves its pod unplaceable; names the 2-move plan with Pending steps", c: build(scenario.PendingStep()),
			limitedBy: LimitPendingSteps, alternative: 2,
			want: []string{"every single eviction leaves its pod unplaceable (each evicted pod must be placed at once;", "2 evictions (", "may wait Pending for 1 step", "--allow-pending-steps"}},
		{name: "Pending-step case, --max-plan-moves 1 → at least 2 needed, no alternative claimed", c: build(scenario.PendingStep()), opts: Options{MaxMoves: 1},
			limitedBy: LimitMaxMoves, want: []string{"at least 2 evictions are needed (2 pods share a node or zone with a pod of their shard"}},
		{name: "Pending-step case with Pending steps → 2 moves, minimal", c: build(scenario.PendingStep()), opts: Options{AllowPendingSteps: true}, wantMoves: 2, wantMinimal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.c, tc.opts)
			if tc.wantMoves > 0 {
				if !p.CompliantAfter || p.Evictions != tc.wantMoves || p.Minimal != tc.wantMinimal || p.Infeasible != "" {
					t.Errorf("evictions %d, compliantAfter %v, minimal %v, infeasible %q; want %d evictions, minimal %v", p.Evictions, p.CompliantAfter, p.Minimal, p.Infeasible, tc.wantMoves, tc.wantMinimal)
				}
				return
			}
			if p.CompliantAfter || len(p.Moves) > 0 || p.LimitedBy != tc.limitedBy {
				t.Errorf("moves %d, compliantAfter %v, limitedBy %q; want no plan, limitedBy %q", len(p.Moves), p.CompliantAfter, p.LimitedBy, tc.limitedBy)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.Infeasible, w) {
					t.Errorf("infeasible %q lacks %q", p.Infeasible, w)
				}
			}
			alt := 0
			if p.WithPendingSteps != nil {
				alt = p.WithPendingSteps.Moves
			}
			if alt != tc.alternative {
				t.Errorf("withPendingSteps %+v, want %d moves", p.WithPendingSteps, tc.alternative)
			}
		})
	}
}

// TestPlanMovesOnlyEvictablePods checks that a plan evicts only pods whose controller re-creates
// them: the post-scale-down placement with its pods owned by an InstanceSet is no Redis cluster
// at all until InstanceSet is named as re-creating pods (its pods are no workload's), and then
// has the plan a StatefulSet would give.
func TestPlanMovesOnlyEvictablePods(t *testing.T) {
	sc := scenario.PostScaleDown()
	sc.RoleLabels = true
	for _, tc := range []struct {
		name       string
		recreating []string
		wantMoves  int // evictions; 0: no plan
	}{
		{name: "InstanceSet not named → not a Redis workload: no cluster, nothing evicted"},
		{name: "InstanceSet named as re-creating → 1 eviction, as with StatefulSets", recreating: []string{"InstanceSet"}, wantMoves: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := sc.MustSnapshot()
			for _, p := range snap.Pods {
				p.OwnerReferences[0].Kind = "InstanceSet"
			}
			snap.StatefulSets = nil
			m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel, RecreatingOwners: tc.recreating})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantMoves == 0 {
				if len(m.Clusters) != 0 {
					t.Fatalf("%d clusters (%s with %d members), want none: an InstanceSet not named is no Redis workload", len(m.Clusters), m.Clusters[0].Key(), len(m.Clusters[0].Members))
				}
				return
			}
			p := Compute(m.Clusters[0], Options{})
			if !p.CompliantAfter || p.Evictions != tc.wantMoves {
				t.Fatalf("compliantAfter %v, %d evictions (%s); want %d", p.CompliantAfter, p.Evictions, p.Infeasible, tc.wantMoves)
			}
		})
	}
}

// TestBoundReason checks the words a lower bound is explained with, from the rule registry, for
// every rule whose excess sets it, and the fallback for the others.
func TestBoundReason(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule policies.Rule
		want string
	}{
		{"MaxPodsPerNode → pods above the per-node limit", policies.MaxPodsPerNode, "3 pods above the per-node limit, one eviction each"},
		{"MaxPodsPerZone → pods above the per-zone limit", policies.MaxPodsPerZone, "3 pods above the per-zone limit, one eviction each"},
		{"ShardSeparation → pods sharing a domain with their shard", policies.ShardSeparation, "3 pods share a node or zone with a pod of their shard, one eviction each"},
		{"AllowedZones → pods outside the allowed zones", policies.AllowedZones, "3 pods run outside the allowed zones, one eviction each"},
		{"ShardSeparation, 1 pod → the verb agrees", policies.ShardSeparation, "1 pod shares a node or zone with a pod of its shard, one eviction each"},
		{"AllowedZones, 1 pod → the verb agrees", policies.AllowedZones, "1 pod runs outside the allowed zones, one eviction each"},
		{"ZoneEvenSplit → the difference narrowed by 2 per eviction", policies.ZoneEvenSplit, "the two zones' pod counts differ too much, and one eviction narrows the difference by at most 2"},
		{"TopologySpread (no excess sum) → the fallback", policies.TopologySpread, "some hard rule is broken"},
		{"no rule → the fallback", "", "some hard rule is broken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 3
			if strings.HasPrefix(tc.want, "1 ") {
				n = 1
			}
			if got := boundReason(n, tc.rule); got != tc.want {
				t.Errorf("boundReason(%d, %q) = %q, want %q", n, tc.rule, got, tc.want)
			}
		})
	}
}

// TestFailoverTargetsStay covers the rule that nodes being emptied (cordoned, or tainted with one
// of the policy's drain taints: policies.Node.Leaving) are never failover targets, in each flow
// that promotes a replica: a MasterQuorum failover step (QuorumFix), the takeover before a
// master's eviction, and the failovers of a partial plan (SafestFailovers). A promoted replica
// there would be evicted by the drain next: a second move. Role-only: n1 holds the masters of s0,
// s1 and s2, whose replicas run on n3, n5 and n4; one failover fixes MasterQuorum.
func TestFailoverTargetsStay(t *testing.T) {
	cordon := fixture.Cordoned()
	taint := func(key string) fixture.NodeOption { return fixture.Tainted(key, "", corev1.TaintEffectNoSchedule) }
	type fo struct{ From, To, ToNode string }
	for _, tc := range []struct {
		name        string
		sc          scenario.Scenario
		nodes       map[string]fixture.NodeOption
		drainTaints []string // policies.Options.DrainTaints (nil: the defaults)
		evictions   int
		want        []fo // the failovers, takeovers and steps alike, in plan order
	}{
		{
			name: "role-only, nothing leaving → s2's master to its replica on n4",
			sc:   scenario.RoleOnly(),
			want: []fo{{"redis/redis-s2-0", "redis/redis-s2-1", "n4"}},
		},
		{
			name:  "role-only, n4 cordoned → another replica (s0's on n3), never n4's",
			sc:    scenario.RoleOnly(),
			nodes: map[string]fixture.NodeOption{"n4": cordon},
			want:  []fo{{"redis/redis-s0-0", "redis/redis-s0-1", "n3"}},
		},
		{
			name:  "role-only, n3 tainted ToBeDeletedByClusterAutoscaler, n4 karpenter.sh/disrupted → s1's master to n5",
			sc:    scenario.RoleOnly(),
			nodes: map[string]fixture.NodeOption{"n3": taint("ToBeDeletedByClusterAutoscaler"), "n4": taint("karpenter.sh/disrupted")},
			want:  []fo{{"redis/redis-s1-0", "redis/redis-s1-1", "n5"}},
		},
		{
			name:      "role-only, n3, n4 and n5 cordoned → s2's replica evicted off n4 first (to n6), then promoted there",
			sc:        scenario.RoleOnly(),
			nodes:     map[string]fixture.NodeOption{"n3": cordon, "n4": cordon, "n5": taint("node.kubernetes.io/unschedulable")},
			evictions: 1,
			want:      []fo{{"redis/redis-s2-0", "redis/redis-s2-1", "n6"}},
		},
		{
			name:  "role-only, every node but n1 and n2 being emptied → no move at all: no replica may be promoted nor placed elsewhere",
			sc:    scenario.RoleOnly(),
			nodes: map[string]fixture.NodeOption{"n3": cordon, "n4": cordon, "n5": cordon, "n6": taint("karpenter.sh/disrupted")},
		},
		{
			name:        "role-only, n3 and n4 cordoned, n5 and n6 tainted with the policy's own drain taint → no move at all",
			sc:          scenario.RoleOnly(),
			nodes:       map[string]fixture.NodeOption{"n3": cordon, "n4": cordon, "n5": taint("example.com/draining"), "n6": taint("example.com/draining")},
			drainTaints: []string{"example.com/draining"},
		},
		{
			name:        "role-only, n3 and n4 cordoned, n5 tainted with a taint that is not a drain taint → n5's replica may take over (s1 to n5)",
			sc:          scenario.RoleOnly(),
			nodes:       map[string]fixture.NodeOption{"n3": cordon, "n4": cordon, "n5": taint("example.com/draining")},
			drainTaints: []string{"example.com/other"},
			want:        []fo{{"redis/redis-s1-0", "redis/redis-s1-1", "n5"}},
		},
		{
			name:      "post-scale-down, n3 cordoned (replicas of s0 and s1) → the takeover before the eviction and the failover steps promote replicas on n4 and n5 only",
			sc:        scenario.PostScaleDown(),
			nodes:     map[string]fixture.NodeOption{"n3": cordon},
			evictions: 1,
			want:      []fo{{"redis/redis-s3-0", "redis/redis-s3-1", "n4"}, {"redis/redis-s2-0", "redis/redis-s2-1", "n4"}, {"redis/redis-s4-0", "redis/redis-s4-1", "n5"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.sc
			sc.RoleLabels = true
			snap := sc.MustSnapshot()
			for _, n := range snap.Nodes {
				if f := tc.nodes[n.Name]; f != nil {
					f(n)
				}
			}
			m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel, DrainTaints: tc.drainTaints})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			p := Compute(c, Options{})
			var got []fo
			for _, mv := range p.Moves {
				t.Logf("%s %s: failover %v to %s on %s", mv.Kind, mv.Pod, mv.Failover, mv.To, mv.ToNode)
				if mv.Failover {
					got = append(got, fo{mv.From, mv.To, mv.ToNode})
					if n := m.Nodes[m.NodeIndex(mv.ToNode)]; n.Leaving != "" {
						t.Errorf("move %s promotes %s on %s, a node being emptied (%s)", mv.Pod, mv.To, mv.ToNode, n.Leaving)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failovers (-want +got):\n%s", diff)
			}
			if p.Evictions != tc.evictions {
				t.Errorf("%d evictions, want %d", p.Evictions, tc.evictions)
			}
		})
	}
}
