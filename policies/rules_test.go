package policies_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
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
			if diff := gocmp.Diff(tc.want, got); diff != "" {
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
	if diff := gocmp.Diff(want, rep.Rejected); diff != "" {
		t.Errorf("rejections (-want +got):\n%s\nsummary: %s", diff, rep.Summary())
	}
	t.Log(rep.Summary())
}

// TestEvaluateHardMatchesEvaluate checks the planner's cheap evaluation against the full one on
// every scenario of the suite and on random placements of each: the same hard violations (rule,
// domain, count, limit), without pod names or messages.
func TestEvaluateHardMatchesEvaluate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	sortHits := func(h []ruleHit) []ruleHit {
		slices.SortFunc(h, func(a, b ruleHit) int {
			return cmp.Compare(string(a.Rule)+"\x00"+a.Domain, string(b.Rule)+"\x00"+b.Domain)
		})
		return h
	}
	checked := 0
	for _, cs := range scenario.Suite() {
		snap, err := cs.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		m, err := policies.Build(snap, policies.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Clusters {
			p := c.Current()
			for k := 0; k < 20; k++ {
				brief := c.EvaluateHard(p)
				for _, v := range brief {
					if v.Pods != nil || v.Message != "" {
						t.Fatalf("%s: EvaluateHard filled Pods or Message: %+v", cs.Name, v)
					}
				}
				want, got := sortHits(hardHits(c.Evaluate(p))), sortHits(hardHits(brief))
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("%s %v: EvaluateHard (-Evaluate +EvaluateHard):\n%s", cs.Name, p, diff)
				}
				checked++
				// Next: move one member to a random node, or unplace it.
				p = p.Clone()
				p[rng.IntN(len(p))] = rng.IntN(len(m.Nodes)+1) - 1
			}
		}
	}
	t.Logf("%d placements compared", checked)
}
