package policies_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

var redisPods = map[string]string{scenario.AppLabel: "redis"}

// members returns bare cluster members ("c1"), one per "node" or "node/shard" entry (shard x
// by default), named m0, m1, …, each with opts.
func members(places []string, opts ...fixture.PodOption) []*corev1.Pod {
	var out []*corev1.Pod
	for i, pl := range places {
		nodeName, shard, _ := strings.Cut(pl, "/")
		if shard == "" {
			shard = "x"
		}
		p := fixture.Pod(fmt.Sprintf("m%d", i), fixture.WithLabels(scenario.AppLabel, "redis", policies.DefaultClusterLabel, "c1", scenario.ShardLabel, shard), fixture.On(nodeName))
		for _, o := range opts {
			o(p)
		}
		out = append(out, p)
	}
	return out
}

// incoming returns the Pending member "in" (shard given) with opts: the pod the filter places.
func incoming(shard string, opts ...fixture.PodOption) *corev1.Pod {
	p := fixture.Pod("in", fixture.WithLabels(scenario.AppLabel, "redis", policies.DefaultClusterLabel, "c1", scenario.ShardLabel, shard), fixture.Unschedulable())
	for _, o := range opts {
		o(p)
	}
	return p
}

// TestTopologySpreadSemantics proves the PodTopologySpread semantics (kube-scheduler's
// podtopologyspread plugin: eligible domains, the global minimum, minDomains, maxSkew) on the same
// rows for Evaluate (the TopologySpread rule on the current placement) and for the filter (where a
// Pending member fits).
func TestTopologySpreadSemantics(t *testing.T) {
	zoneKey := corev1.LabelTopologyZone
	hostKey := corev1.LabelHostname
	threeZones := func(extra ...*corev1.Node) []*corev1.Node {
		return append(fixture.ZonedNodes(2, "a", "b", "c"), extra...)
	}
	zoneSpread := func(maxSkew int32, opts ...fixture.SpreadOption) fixture.PodOption {
		return fixture.SpreadOn(zoneKey, maxSkew, redisPods, opts...)
	}
	abc := fixture.RequiredIn(zoneKey, "zone-a", "zone-b", "zone-c")
	for _, tc := range []struct {
		name     string
		nodes    []*corev1.Node
		members  []string            // "node" or "node/shard"
		spec     []fixture.PodOption // applied to every member and to the incoming pod
		others   []*corev1.Pod
		inShard  string
		wantEval []hit
		wantFits []string
		// wantRejected, when set, is compared with Explain's rejections.
		wantRejected map[string][]string
	}{
		{
			name:     "3 zones, pods [4,1,1], maxSkew 2 → violation on zone-a (skew 3); the incoming pod fits zones b and c",
			nodes:    threeZones(),
			members:  []string{"n1", "n1", "n2", "n2", "n3", "n5"},
			spec:     []fixture.PodOption{zoneSpread(2)},
			wantEval: []hit{{policies.TopologySpread, "zone-a", 3, 2, false}},
			wantFits: []string{"n3", "n4", "n5", "n6"},
		},
		{
			name:     "3 zones, pods [3,1,1], maxSkew 2 → compliant (skew 2); zone-a would reach 3+1−1 = 3 > 2",
			nodes:    threeZones(),
			members:  []string{"n1", "n1", "n2", "n3", "n5"},
			spec:     []fixture.PodOption{zoneSpread(2)},
			wantFits: []string{"n3", "n4", "n5", "n6"},
			wantRejected: map[string][]string{
				"node(s) didn't match pod topology spread constraints": {"n1", "n2"},
			},
		},
		{
			name:     "matchLabelKeys [shard]: shard y holds [0,0,2] → violation on zone-c for y's instance, though the cluster's [1,1,2] would comply",
			nodes:    threeZones(),
			members:  []string{"n1/x", "n3/x", "n5/y", "n6/y"},
			spec:     []fixture.PodOption{zoneSpread(1, fixture.MatchLabelKeys(scenario.ShardLabel))},
			inShard:  "y",
			wantEval: []hit{{policies.TopologySpread, "zone-c", 2, 1, false}},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:     "without matchLabelKeys the same pods [1,1,2] comply",
			nodes:    threeZones(),
			members:  []string{"n1/x", "n3/x", "n5/y", "n6/y"},
			spec:     []fixture.PodOption{zoneSpread(1)},
			inShard:  "y",
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:     "a matching pod in another namespace is not counted: zone-c holds 0 → global minimum 0, violation on zone-a 2/1",
			nodes:    threeZones(),
			members:  []string{"n1", "n2", "n3"},
			spec:     []fixture.PodOption{zoneSpread(1)},
			others:   []*corev1.Pod{fixture.Pod("other-ns", fixture.WithLabels(scenario.AppLabel, "redis"), fixture.InNamespace("other"), fixture.On("n5"))},
			wantEval: []hit{{policies.TopologySpread, "zone-a", 2, 1, false}},
			wantFits: []string{"n5", "n6"},
		},
		{
			name:     "another app's pod in the namespace matching the selector is counted: zone-c holds 1 → compliant",
			nodes:    threeZones(),
			members:  []string{"n1", "n2", "n3"},
			spec:     []fixture.PodOption{zoneSpread(1)},
			others:   []*corev1.Pod{fixture.Pod("cache", fixture.WithLabels(scenario.AppLabel, "redis"), fixture.On("n5"))},
			wantFits: []string{"n3", "n4", "n5", "n6"},
		},
		{
			name:     "a terminating matching pod is not counted: zone-c holds 0 → violation on zone-a 2/1",
			nodes:    threeZones(),
			members:  []string{"n1", "n2", "n3"},
			spec:     []fixture.PodOption{zoneSpread(1)},
			others:   []*corev1.Pod{fixture.Pod("cache", fixture.WithLabels(scenario.AppLabel, "redis"), fixture.On("n5"), fixture.Terminating())},
			wantEval: []hit{{policies.TopologySpread, "zone-a", 2, 1, false}},
			wantFits: []string{"n5", "n6"},
		},
		{
			name:     "a finished (Succeeded) matching pod is not counted: violation on zone-a 2/1",
			nodes:    threeZones(),
			members:  []string{"n1", "n2", "n3"},
			spec:     []fixture.PodOption{zoneSpread(1)},
			others:   []*corev1.Pod{fixture.Pod("job", fixture.WithLabels(scenario.AppLabel, "redis"), fixture.On("n5"), fixture.Succeeded())},
			wantEval: []hit{{policies.TopologySpread, "zone-a", 2, 1, false}},
			wantFits: []string{"n5", "n6"},
		},
		{
			name:     "nodes lacking the key are skipped: 3 pods on unzoned n7 are not counted, [1,1,1] complies; n7 is rejected (missing required label)",
			nodes:    threeZones(fixture.Node("n7")),
			members:  []string{"n1", "n3", "n5", "n7", "n7", "n7"},
			spec:     []fixture.PodOption{zoneSpread(1)},
			wantFits: []string{"n1", "n2", "n3", "n4", "n5", "n6"},
			wantRejected: map[string][]string{
				"node(s) didn't match pod topology spread constraints (missing required label)": {"n7"},
			},
		},
		{
			name:    "a node lacking the key of the pod's other DoNotSchedule constraint is skipped by both: n7 (zone-c, no hostname) holds 3 → not counted, compliant",
			nodes:   threeZones(fixture.Node("n7", fixture.InZone("zone-c"), fixture.WithoutNodeLabel(hostKey))),
			members: []string{"n1", "n3", "n7", "n7", "n7"},
			spec:    []fixture.PodOption{zoneSpread(1), fixture.SpreadOn(hostKey, 1, redisPods)},
			// zone: a 1, b 1, c 0 → only zone-c takes a pod; hostname: n5, n6 hold 0.
			wantFits: []string{"n5", "n6"},
			wantRejected: map[string][]string{
				"node(s) didn't match pod topology spread constraints":                          {"n1", "n2", "n3", "n4"},
				"node(s) didn't match pod topology spread constraints (missing required label)": {"n7"},
			},
		},
		{
			name:     "nodeAffinityPolicy Honor (default) with zone-d excluded by node affinity: zone-d is no domain, [2,1,1] complies",
			nodes:    fixture.ZonedNodes(2, "a", "b", "c", "d"),
			members:  []string{"n1", "n2", "n3", "n5"},
			spec:     []fixture.PodOption{abc, zoneSpread(1)},
			wantFits: []string{"n3", "n4", "n5", "n6"},
			wantRejected: map[string][]string{
				"node(s) didn't match Pod's node affinity/selector":    {"n7", "n8"},
				"node(s) didn't match pod topology spread constraints": {"n1", "n2"},
			},
		},
		{
			name:     "nodeAffinityPolicy Ignore with zone-d excluded: empty zone-d is a domain → global minimum 0, violation on zone-a 2/1, nothing fits",
			nodes:    fixture.ZonedNodes(2, "a", "b", "c", "d"),
			members:  []string{"n1", "n2", "n3", "n5"},
			spec:     []fixture.PodOption{abc, zoneSpread(1, fixture.NodeAffinityPolicy(corev1.NodeInclusionPolicyIgnore))},
			wantEval: []hit{{policies.TopologySpread, "zone-a", 2, 1, false}},
			wantFits: nil,
			wantRejected: map[string][]string{
				"node(s) didn't match Pod's node affinity/selector":    {"n7", "n8"},
				"node(s) didn't match pod topology spread constraints": {"n1", "n2", "n3", "n4", "n5", "n6"},
			},
		},
		{
			name:     "nodeTaintsPolicy Ignore (default) with a tainted empty node n4: n4 is a domain → minimum 0, violation on n1 2/1, nothing fits",
			nodes:    []*corev1.Node{fixture.Node("n1"), fixture.Node("n2"), fixture.Node("n3"), fixture.Node("n4", fixture.Tainted("dedicated", "x", corev1.TaintEffectNoSchedule))},
			members:  []string{"n1", "n1", "n2", "n3"},
			spec:     []fixture.PodOption{fixture.SpreadOn(hostKey, 1, redisPods)},
			wantEval: []hit{{policies.TopologySpread, "n1", 2, 1, false}},
			wantFits: nil,
			wantRejected: map[string][]string{
				"node(s) had untolerated taint(s)":                     {"n4"},
				"node(s) didn't match pod topology spread constraints": {"n1", "n2", "n3"},
			},
		},
		{
			name:     "nodeTaintsPolicy Honor with a tainted empty node n4: n4 is no domain → minimum 1, compliant; fits n2, n3",
			nodes:    []*corev1.Node{fixture.Node("n1"), fixture.Node("n2"), fixture.Node("n3"), fixture.Node("n4", fixture.Tainted("dedicated", "x", corev1.TaintEffectNoSchedule))},
			members:  []string{"n1", "n1", "n2", "n3"},
			spec:     []fixture.PodOption{fixture.SpreadOn(hostKey, 1, redisPods, fixture.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor))},
			wantFits: []string{"n2", "n3"},
		},
		{
			name:     "nodeTaintsPolicy Honor with a tolerated taint: n4 stays a domain → minimum 0, violation on n1 2/1; fits n4",
			nodes:    []*corev1.Node{fixture.Node("n1"), fixture.Node("n2"), fixture.Node("n3"), fixture.Node("n4", fixture.Tainted("dedicated", "x", corev1.TaintEffectNoSchedule))},
			members:  []string{"n1", "n1", "n2", "n3"},
			spec:     []fixture.PodOption{fixture.Tolerates("dedicated", corev1.TaintEffectNoSchedule), fixture.SpreadOn(hostKey, 1, redisPods, fixture.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor))},
			wantEval: []hit{{policies.TopologySpread, "n1", 2, 1, false}},
			wantFits: []string{"n4"},
		},
		{
			name:     "minDomains 4 with 3 eligible zones → global minimum 0: [1,1,2] breaks on zone-c 2/1, nothing fits",
			nodes:    threeZones(),
			members:  []string{"n1", "n3", "n5", "n6"},
			spec:     []fixture.PodOption{zoneSpread(1, fixture.MinDomains(4))},
			wantEval: []hit{{policies.TopologySpread, "zone-c", 2, 1, false}},
			wantFits: nil,
		},
		{
			name:     "minDomains 3 with 3 eligible zones → global minimum 1: [1,1,2] complies; fits zones a, b",
			nodes:    threeZones(),
			members:  []string{"n1", "n3", "n5", "n6"},
			spec:     []fixture.PodOption{zoneSpread(1, fixture.MinDomains(3))},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:     "an empty labelSelector ({}) counts no pod (countPodsMatchSelector): [3,0,0] complies, fits everywhere (skew 0+1−0)",
			nodes:    threeZones(),
			members:  []string{"n1", "n1", "n2"},
			spec:     []fixture.PodOption{zoneSpread(1, fixture.EmptySelector())},
			wantFits: []string{"n1", "n2", "n3", "n4", "n5", "n6"},
		},
		{
			name:     "a nil labelSelector matches no pod: [3,0,0] complies, fits everywhere",
			nodes:    threeZones(),
			members:  []string{"n1", "n1", "n2"},
			spec:     []fixture.PodOption{zoneSpread(1, fixture.NilSelector())},
			wantFits: []string{"n1", "n2", "n3", "n4", "n5", "n6"},
		},
		{
			name:     "a nil labelSelector stays Nothing with matchLabelKeys (mergeLabelSetWithSelector): fits everywhere",
			nodes:    threeZones(),
			members:  []string{"n1", "n1", "n2"},
			spec:     []fixture.PodOption{zoneSpread(1, fixture.NilSelector(), fixture.MatchLabelKeys(scenario.ShardLabel))},
			wantFits: []string{"n1", "n2", "n3", "n4", "n5", "n6"},
		},
		{
			name:     "ScheduleAnyway is not enforced: [4,1,1] complies, fits everywhere",
			nodes:    threeZones(),
			members:  []string{"n1", "n1", "n2", "n2", "n3", "n5"},
			spec:     []fixture.PodOption{zoneSpread(1, fixture.ScheduleAnyway())},
			wantFits: []string{"n1", "n2", "n3", "n4", "n5", "n6"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shard := tc.inShard
			if shard == "" {
				shard = "x"
			}
			objs := []any{incoming(shard, tc.spec...)}
			for _, p := range members(tc.members, tc.spec...) {
				objs = append(objs, p)
			}
			for _, p := range tc.others {
				objs = append(objs, p)
			}
			m, err := policies.Build(snapshotOf(tc.nodes, nil, objs...), policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := clusterNamed(m, "c1")
			got := only(hits(c.Evaluate(c.Current())), policies.TopologySpread)
			if diff := cmp.Diff(tc.wantEval, got); diff != "" {
				t.Errorf("Evaluate TopologySpread (-want +got):\n%s", diff)
			}
			in := memberIndex(c, "in")
			fits := nodeNames(m, c.Candidates(c.Current(), in))
			want := tc.wantFits
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, fits); diff != "" {
				t.Errorf("Candidates (-want +got):\n%s\n%s", diff, c.Explain(c.Current(), in).Summary())
			}
			rep := c.Explain(c.Current(), in)
			if diff := cmp.Diff(tc.wantFits, rep.Fits); diff != "" {
				t.Errorf("Explain fits (-want +got):\n%s", diff)
			}
			if tc.wantRejected != nil {
				if diff := cmp.Diff(tc.wantRejected, rep.Rejected); diff != "" {
					t.Errorf("Explain rejections (-want +got):\n%s", diff)
				}
			}
			for n := range m.Nodes {
				ok, why := c.Fits(c.Current(), in, n)
				if ok != contains(fits, m.Nodes[n].Name) {
					t.Errorf("Fits(%s) = %v (%s), Candidates disagree", m.Nodes[n].Name, ok, why)
				}
			}
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
