package policies_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

type ruleHit struct {
	Rule   policies.Rule
	Domain string
	Count  int
	Limit  int
}

func hardHits(vs []policies.Violation) []ruleHit {
	var out []ruleHit
	for _, v := range policies.Hard(vs) {
		out = append(out, ruleHit{v.Rule, v.Domain, v.Count, v.Limit})
	}
	return out
}

func TestEvaluateScenarios(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   scenario.Scenario
		opts policies.Options
		want []ruleHit
	}{
		{
			name: "post-scale-down N=10: n1 4 masters, zone-a 5 → MaxPodsPerNode, MaxPodsPerZone, TopologySpread(hostname)",
			sc:   scenario.PostScaleDown(),
			want: []ruleHit{
				{policies.MaxPodsPerNode, "n1", 4, 3},
				{policies.MaxPodsPerZone, "zone-a", 5, 4},
				{policies.TopologySpread, "n1", 4, 3},
			},
		},
		{
			name: "seed deadlock: only Unschedulable",
			sc:   scenario.SeedDeadlock(),
			want: []ruleHit{{policies.Unschedulable, "", 1, 0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(tc.sc.MustSnapshot(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Clusters) != 1 {
				t.Fatalf("clusters = %d, want 1", len(m.Clusters))
			}
			c := m.Clusters[0]
			got := hardHits(c.Evaluate(c.Current()))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeedDeadlockExplain(t *testing.T) {
	sc := scenario.SeedDeadlock()
	m, err := policies.Build(sc.MustSnapshot(), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	var pending int = -1
	for i, mem := range c.Members {
		if mem.Pod.Name == sc.PodName(2, 1) {
			pending = i
		}
	}
	rep := c.Explain(c.Current(), pending)
	if len(rep.Fits) != 0 {
		t.Fatalf("pending pod fits %v, want none", rep.Fits)
	}
	want := map[string][]string{
		"node(s) didn't match pod anti-affinity rules":         {"n5"},
		"node(s) didn't match pod topology spread constraints": {"n1", "n2", "n3", "n4", "n6"},
	}
	if diff := cmp.Diff(want, rep.Rejected); diff != "" {
		t.Errorf("rejections (-want +got):\n%s\nsummary: %s", diff, rep.Summary())
	}
	t.Log(rep.Summary())
}
