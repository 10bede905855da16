package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

func TestCandidatesText(t *testing.T) {
	for _, tc := range []struct {
		name string
		mv   plan.Move
		want string
	}{
		{name: "no candidates → (none)", mv: plan.Move{}, want: "(none)"},
		{
			name: "few → the expected node, then the others by group",
			mv: plan.Move{Expected: "n5", Candidates: []plan.Candidate{
				{Node: "n2", OnTrack: false}, {Node: "n5", OnTrack: true}, {Node: "n6", OnTrack: true},
			}},
			want: "n5 (expected); 1 more on track: n6; 1 off plan: n2",
		},
		{
			name: "many → counted, three names each",
			mv: plan.Move{Expected: "n1", Candidates: []plan.Candidate{
				{Node: "n1", OnTrack: true}, {Node: "n2", OnTrack: true}, {Node: "n3", OnTrack: true}, {Node: "n4", OnTrack: true},
				{Node: "n7", OnTrack: true}, {Node: "n8"}, {Node: "n9"}, {Node: "n10"}, {Node: "n11"},
			}},
			want: "n1 (expected); 4 more on track: n2, n3, n4, …; 4 off plan: n8, n9, n10, …",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CandidatesText(tc.mv); got != tc.want {
				t.Errorf("CandidatesText = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlanTextAtScale renders the plans of drifted clusters on 1,000 nodes: every line of a plan
// or of a Pending pod's diagnosis stays short (candidates summarised, rejected nodes counted
// beyond the first ten), while the JSON form keeps every candidate node. (A line of the zones ×
// nodes map lists the pods of one node, however many.)
func TestPlanTextAtScale(t *testing.T) {
	cfg := synth.Config{Seed: 5, Nodes: 1000, Zones: 3, Namespaces: 2, Pods: 3000, RedisClusters: 6, MinPods: 30, MaxPods: 60, DriftFraction: 1}
	snap, _ := synth.GenerateWithStats(cfg)
	m, err := policies.Build(snap, policies.Options{RoleLabel: "redis.rebalancer.io/role"})
	if err != nil {
		t.Fatal(err)
	}
	a := Analyze(m, true, plan.Options{})
	most := 0
	for _, ca := range a.Clusters {
		for _, mv := range ca.Moves {
			most = max(most, len(mv.CandidateNodes))
			if len(mv.Candidates) != len(mv.CandidateNodes) {
				t.Errorf("%s: %d candidates, %d candidate nodes", mv.Pod, len(mv.Candidates), len(mv.CandidateNodes))
			}
		}
	}
	if most < 200 {
		t.Fatalf("the largest move has %d candidate nodes; the test needs hundreds", most)
	}
	var out bytes.Buffer
	RenderAnalysis(&out, m, a, true)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "  ZONE") || strings.HasPrefix(line, "  zone-") || strings.HasPrefix(line, "          ") {
			continue // the map
		}
		if len(line) > 400 {
			t.Errorf("line of %d bytes: %.200s…", len(line), line)
		}
	}
	t.Logf("largest move: %d candidate nodes in JSON; text of %d bytes for %d clusters", most, out.Len(), len(a.Clusters))
}
