package handoff

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// clusterOf builds sc's only Redis cluster, roles from the scenario's role label (ordinal 0 the
// master of its shard), the nodes cordoned cordoned.
func clusterOf(t *testing.T, sc scenario.Scenario, cordoned ...string) *policies.Cluster {
	t.Helper()
	sc.RoleLabels = true
	snap, err := sc.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snap.Nodes {
		if slices.Contains(cordoned, n.Name) {
			fixture.Cordoned()(n)
		}
	}
	m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	return m.Clusters[0]
}

// memberOf returns the index of pod name.
func memberOf(t *testing.T, c *policies.Cluster, name string) int {
	t.Helper()
	for i, m := range c.Members {
		if m.Pod.Name == name {
			return i
		}
	}
	t.Fatalf("no member %s", name)
	return -1
}

// failoverText is "from (node) → to (node)" for each move.
func failoverText(p plan.Plan) []string {
	var out []string
	for _, mv := range p.Moves {
		out = append(out, mv.From+" ("+mv.Node+") → "+mv.To+" ("+mv.ToNode+")")
	}
	return out
}

func TestDrainPlanner(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sc      scenario.Scenario
		nodes   []string
		members []string
		// cordoned are nodes cordoned in the model but not handed off (not Ready, say): their
		// replicas are no failover targets either.
		cordoned []string
		want     []string
		// infeasible is a part of Plan.Infeasible ("" when the plan must be feasible).
		infeasible string
	}{
		{
			name:  "post-scale-down, n1 emptied → its 4 masters each to their only replica",
			sc:    scenario.PostScaleDown(),
			nodes: []string{"n1"},
			want: []string{
				"redis/redis-s0-0 (n1) → redis/redis-s0-1 (n3)", "redis/redis-s1-0 (n1) → redis/redis-s1-1 (n3)",
				"redis/redis-s2-0 (n1) → redis/redis-s2-1 (n4)", "redis/redis-s3-0 (n1) → redis/redis-s3-1 (n4)",
			},
		},
		{
			name:  "role-only, n1 emptied → room made first on n3 and n6 (plan.HandOff), then its 3 masters leave",
			sc:    scenario.RoleOnly(),
			nodes: []string{"n1"},
			want: []string{
				"redis/redis-s3-0 (n3) → redis/redis-s3-1 (n6)", "redis/redis-s4-0 (n6) → redis/redis-s4-1 (n2)",
				"redis/redis-s0-0 (n1) → redis/redis-s0-1 (n3)", "redis/redis-s1-0 (n1) → redis/redis-s1-1 (n5)",
				"redis/redis-s2-0 (n1) → redis/redis-s2-1 (n4)",
			},
		},
		{
			name:    "role-only, n1 emptied and redis-s3-0's eviction held too → the node's hand-off covers it once",
			sc:      scenario.RoleOnly(),
			nodes:   []string{"n1"},
			members: []string{"redis-s3-0"},
			want: []string{
				"redis/redis-s3-0 (n3) → redis/redis-s3-1 (n6)", "redis/redis-s4-0 (n6) → redis/redis-s4-1 (n2)",
				"redis/redis-s0-0 (n1) → redis/redis-s0-1 (n3)", "redis/redis-s1-0 (n1) → redis/redis-s1-1 (n5)",
				"redis/redis-s2-0 (n1) → redis/redis-s2-1 (n4)",
			},
		},
		{
			name:    "role-only, the eviction of redis-s4-0 held, no node emptied → that master only",
			sc:      scenario.RoleOnly(),
			members: []string{"redis-s4-0"},
			want:    []string{"redis/redis-s4-0 (n6) → redis/redis-s4-1 (n2)"},
		},
		{
			name:    "a replica's eviction held → nothing to hand off",
			sc:      scenario.RoleOnly(),
			members: []string{"redis-s4-1"},
		},
		{
			name:       "post-scale-down, n1 and n3 emptied → the masters whose replicas are on n3 have none that stays: infeasible for them, the others planned",
			sc:         scenario.PostScaleDown(),
			nodes:      []string{"n1", "n3"},
			want:       []string{"redis/redis-s2-0 (n1) → redis/redis-s2-1 (n4)", "redis/redis-s3-0 (n1) → redis/redis-s3-1 (n4)"},
			infeasible: "master redis/redis-s0-0 has no replica on a node that stays; master redis/redis-s1-0 has no replica on a node that stays",
		},
		{
			name:       "role-only, the eviction of redis-s4-0 held, its replica's node n2 cordoned but not handed off → no target: infeasible",
			sc:         scenario.RoleOnly(),
			members:    []string{"redis-s4-0"},
			cordoned:   []string{"n2"},
			infeasible: "master redis/redis-s4-0 (the guard held its eviction) has no replica on a node that stays",
		},
		{
			name:       "post-scale-down, n1 emptied, n4 cordoned but not handed off → s2's and s3's masters have no target; s0's and s1's to n3",
			sc:         scenario.PostScaleDown(),
			nodes:      []string{"n1"},
			cordoned:   []string{"n4"},
			want:       []string{"redis/redis-s0-0 (n1) → redis/redis-s0-1 (n3)", "redis/redis-s1-0 (n1) → redis/redis-s1-1 (n3)"},
			infeasible: "master redis/redis-s2-0 has no replica on a node that stays; master redis/redis-s3-0 has no replica on a node that stays",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clusterOf(t, tc.sc, tc.cordoned...)
			l := Leaving{Nodes: map[string]string{}, Members: map[int]string{}}
			for _, n := range tc.nodes {
				l.Nodes[n] = "cordoned"
			}
			for _, m := range tc.members {
				l.Members[memberOf(t, c, m)] = "the guard held its eviction"
			}
			p := DrainPlanner(c, l)
			if diff := cmp.Diff(tc.want, failoverText(p)); diff != "" {
				t.Errorf("failovers (-want +got):\n%s", diff)
			}
			if tc.infeasible == "" && p.Infeasible != "" || !strings.Contains(p.Infeasible, tc.infeasible) {
				t.Errorf("infeasible %q, want %q", p.Infeasible, tc.infeasible)
			}
			for _, mv := range p.Moves {
				if mv.Kind != plan.KindFailover || c.Members[mv.Member].Key() != mv.From || c.Members[mv.FailoverTo].Key() != mv.To {
					t.Errorf("move %+v does not name its members as the executor reads them", mv)
				}
			}
		})
	}
}
