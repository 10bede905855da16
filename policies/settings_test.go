package policies_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// judgeOnly returns rule settings that judge exactly rules, each hard unless the registry says soft.
func judgeOnly(rules ...policies.Rule) map[policies.Rule]policies.RuleSetting {
	out := map[policies.Rule]policies.RuleSetting{}
	for _, info := range policies.Rules() {
		out[info.Name] = policies.RuleSetting{Enabled: slices.Contains(rules, info.Name), Soft: info.Soft}
	}
	return out
}

// judged returns "Rule" for each hard violation of vs and "~Rule" for each soft one, once each,
// sorted.
func judged(vs []policies.Violation) []string {
	var out []string
	for _, v := range vs {
		s := string(v.Rule)
		if v.Soft {
			s = "~" + s
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// TestRuleSettings judges the post-scale-down scenario (four masters on n1, five pods in zone-a)
// under rule settings: a disabled rule is neither reported nor read by the State (the planner's
// verdict), a hard rule made soft is reported soft and no longer decides compliance, an optional
// rule is judged only when enabled, and Build refuses unknown rules and soft rules made hard.
func TestRuleSettings(t *testing.T) {
	sc := scenario.PostScaleDown()
	sc.RoleLabels = true
	snap := sc.MustSnapshot()
	for _, tc := range []struct {
		name    string
		rules   map[policies.Rule]policies.RuleSetting
		want    []string
		wantErr string
	}{
		{
			name: "defaults: the default rules judged, the optional ones not",
			want: []string{"MasterQuorum", "MaxPodsPerNode", "MaxPodsPerZone", "TopologySpread", "~NodeSpread", "~ZoneBalance"},
		},
		{
			name:  "MaxPodsPerNode disabled: not reported",
			rules: map[policies.Rule]policies.RuleSetting{policies.MaxPodsPerNode: {}},
			want:  []string{"MasterQuorum", "MaxPodsPerZone", "TopologySpread", "~NodeSpread", "~ZoneBalance"},
		},
		{
			name:  "only TopologySpread: the other rules are not reported",
			rules: judgeOnly(policies.TopologySpread),
			want:  []string{"TopologySpread"},
		},
		{
			name:  "MasterQuorum and ZoneBalance only",
			rules: judgeOnly(policies.MasterQuorum, policies.ZoneBalance),
			want:  []string{"MasterQuorum", "~ZoneBalance"},
		},
		{
			name:  "MasterQuorum and MaxPodsPerZone made soft",
			rules: map[policies.Rule]policies.RuleSetting{policies.MasterQuorum: {Enabled: true, Soft: true}, policies.MaxPodsPerZone: {Enabled: true, Soft: true}},
			want:  []string{"MaxPodsPerNode", "TopologySpread", "~MasterQuorum", "~MaxPodsPerZone", "~NodeSpread", "~ZoneBalance"},
		},
		{
			name:  "SoftTopologySpread enabled: the templates' ScheduleAnyway constraints are judged, soft",
			rules: map[policies.Rule]policies.RuleSetting{policies.SoftTopologySpread: {Enabled: true, Soft: true}},
			want:  []string{"MasterQuorum", "MaxPodsPerNode", "MaxPodsPerZone", "TopologySpread", "~NodeSpread", "~SoftTopologySpread", "~ZoneBalance"},
		},
		{
			name:    "a soft rule made hard: refused",
			rules:   map[policies.Rule]policies.RuleSetting{policies.NodeSpread: {Enabled: true}},
			wantErr: "a soft rule cannot be made hard",
		},
		{
			name:    "an unknown rule: refused",
			rules:   map[policies.Rule]policies.RuleSetting{"MaxPodsPerRack": {Enabled: true}},
			wantErr: `rule "MaxPodsPerRack": no such rule`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel, Rules: tc.rules})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Build: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			vs := c.Evaluate(c.Current())
			if diff := cmp.Diff(tc.want, judged(vs)); diff != "" {
				t.Errorf("judged rules (-want +got):\n%s", diff)
			}
			for _, v := range vs {
				if s := m.Setting(v.Rule); !s.Enabled || s.Soft != v.Soft {
					t.Errorf("%s violation (soft %v) under setting %+v", v.Rule, v.Soft, s)
				}
			}
			st := c.NewState(c.Current())
			hard := policies.Hard(vs)
			if s := st.Summary(); s.Compliant != (len(hard) == 0) {
				t.Errorf("State: compliant %v, Evaluate: %d hard violations", s.Compliant, len(hard))
			}
			if fix, ok := st.QuorumFix(); m.Setting(policies.MasterQuorum).Soft && (!ok || len(fix) > 0) {
				t.Errorf("MasterQuorum soft: QuorumFix = %v, %v; want no failover", fix, ok)
			}
		})
	}
}

// descheduledPods returns fixture.ReplicaSetPods for counts per node (nodes in order) of Redis
// cluster "tsc", each labelled foo=bar and carrying opts.
func descheduledPods(counts map[string]int, nodes []string, opts ...fixture.PodOption) []*corev1.Pod {
	var n []int
	for _, node := range nodes {
		n = append(n, counts[node])
	}
	return fixture.ReplicaSetPods(nodes, n, append([]fixture.PodOption{fixture.WithLabels("foo", "bar", policies.DefaultClusterLabel, "tsc")}, opts...)...)
}

// TestSpreadInfeasibility checks that counting alone (StaticInfeasibility, no search) rules
// compliance out where node capacity or pods that cannot leave their domain forbid every
// placement within maxSkew, and only there.
func TestSpreadInfeasibility(t *testing.T) {
	zone := func(z string) fixture.NodeOption { return fixture.NodeLabel("zone", z) }
	spread := fixture.SpreadOn("zone", 1, map[string]string{"foo": "bar"})
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  string // "" when counting finds no obstacle
	}{
		{
			name: "[0,1,100] over 3 nodes of 10 pods' capacity: at most 31 fit within maxSkew 1",
			nodes: []*corev1.Node{
				fixture.Node("n1", zone("zoneA"), fixture.Allocatable("2", "3Gi", 10)),
				fixture.Node("n2", zone("zoneB"), fixture.Allocatable("2", "3Gi", 10)),
				fixture.Node("n3", zone("zoneC"), fixture.Allocatable("20", "30Gi", 10)),
			},
			pods: descheduledPods(map[string]int{"n2": 1, "n3": 100}, []string{"n2", "n3"}, spread),
			want: "TopologySpread zone maxSkew 1: no placement of its 101 matching pods over its 3 domains keeps the skew within 1 (at most 31 fit within it): zoneA at least 0, at most 10; zoneB at least 0, at most 10; zoneC at least 0, at most 100",
		},
		{
			name:  "[4,0], three pods pinned to zoneA: the skew stays above maxSkew",
			nodes: []*corev1.Node{fixture.Node("n1", zone("zoneA")), fixture.Node("n2", zone("zoneB"))},
			pods: append(descheduledPods(map[string]int{"n1": 3}, []string{"n1"}, spread, fixture.NodeSelector("zone", "zoneA")),
				fixture.Pod("pod-3", fixture.On("n1"), fixture.WithLabels("foo", "bar", policies.DefaultClusterLabel, "tsc"), fixture.ControlledBy("apps/v1", "ReplicaSet", "rs"), spread)),
			want: "(pods that cannot leave their domain skew it already): zoneA at least 3, at most 4; zoneB at least 0, at most 1",
		},
		{
			name:  "[4,0] with every pod free to move: no obstacle",
			nodes: []*corev1.Node{fixture.Node("n1", zone("zoneA")), fixture.Node("n2", zone("zoneB"))},
			pods:  descheduledPods(map[string]int{"n1": 4}, []string{"n1"}, spread),
		},
		{
			name: "[2,6] maxSkew 2, no CPU left on zoneA's node: at most 6 fit",
			nodes: []*corev1.Node{
				fixture.Node("n1", zone("zoneA"), fixture.Allocatable("200m", "3Gi", 10)),
				fixture.Node("n2", zone("zoneB"), fixture.Allocatable("2", "3Gi", 10)),
			},
			pods: descheduledPods(map[string]int{"n1": 2, "n2": 6}, []string{"n1", "n2"}, fixture.SpreadOn("zone", 2, map[string]string{"foo": "bar"})),
			want: "(at most 6 fit within it): zoneA at least 0, at most 2; zoneB at least 0, at most 8",
		},
		{
			name:  "three pods without owners stay in zoneA, one may move: the skew stays above maxSkew",
			nodes: []*corev1.Node{fixture.Node("n1", zone("zoneA")), fixture.Node("n2", zone("zoneB"))},
			pods: []*corev1.Pod{
				fixture.Pod("pod-0", fixture.On("n1"), fixture.WithLabels("foo", "bar", policies.DefaultClusterLabel, "tsc"), spread),
				fixture.Pod("pod-1", fixture.On("n1"), fixture.WithLabels("foo", "bar", policies.DefaultClusterLabel, "tsc"), spread),
				fixture.Pod("pod-2", fixture.On("n1"), fixture.WithLabels("foo", "bar", policies.DefaultClusterLabel, "tsc"), spread),
				fixture.Pod("pod-3", fixture.On("n1"), fixture.WithLabels("foo", "bar", policies.DefaultClusterLabel, "tsc"), fixture.ControlledBy("apps/v1", "ReplicaSet", "rs"), spread),
			},
			want: "(pods that cannot leave their domain skew it already): zoneA at least 3, at most 4; zoneB at least 0, at most 1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(&policies.Snapshot{Nodes: tc.nodes, Pods: tc.pods}, policies.Options{
				RecreatingOwners: []string{"ReplicaSet"}, Rules: judgeOnly(policies.TopologySpread),
			})
			if err != nil {
				t.Fatal(err)
			}
			got := m.Clusters[0].StaticInfeasibility(nil)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("StaticInfeasibility(nil) = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOptionalSoftRules checks the optional soft rules: a ScheduleAnyway constraint is judged as a
// DoNotSchedule one is, and a preferred anti-affinity term is broken by a pod it selects in its
// domain; both are soft, and neither is judged unless enabled.
func TestOptionalSoftRules(t *testing.T) {
	soft := map[policies.Rule]policies.RuleSetting{
		policies.SoftTopologySpread: {Enabled: true, Soft: true}, policies.PreferredAntiAffinity: {Enabled: true, Soft: true},
		policies.MaxPodsPerNode: {}, policies.ShardSeparation: {},
	}
	zone := func(z string) fixture.NodeOption { return fixture.NodeLabel("zone", z) }
	nodes := []*corev1.Node{fixture.Node("n1", zone("zoneA")), fixture.Node("n2", zone("zoneB"))}
	anyway := fixture.SpreadOn("zone", 1, map[string]string{"foo": "bar"}, fixture.ScheduleAnyway())
	apart := fixture.PreferredAntiAffinity(100, corev1.LabelHostname, map[string]string{"foo": "bar"})
	for _, tc := range []struct {
		name  string
		pods  []*corev1.Pod
		rules map[policies.Rule]policies.RuleSetting
		want  []string // "Rule domain", soft only
	}{
		{
			name: "ScheduleAnyway [3,1]: zoneA's skew 2 > 1",
			pods: descheduledPods(map[string]int{"n1": 3, "n2": 1}, []string{"n1", "n2"}, anyway), rules: soft,
			want: []string{"SoftTopologySpread zoneA"},
		},
		{
			name: "ScheduleAnyway [2,2]: holds",
			pods: descheduledPods(map[string]int{"n1": 2, "n2": 2}, []string{"n1", "n2"}, anyway), rules: soft,
		},
		{
			name: "ScheduleAnyway [3,1], the rule not enabled: not judged",
			pods: descheduledPods(map[string]int{"n1": 3, "n2": 1}, []string{"n1", "n2"}, anyway),
		},
		{
			name: "preferred hostname anti-affinity, two pods on n1: both terms broken there",
			pods: descheduledPods(map[string]int{"n1": 2, "n2": 1}, []string{"n1", "n2"}, apart), rules: soft,
			want: []string{"PreferredAntiAffinity n1", "PreferredAntiAffinity n1"},
		},
		{
			name: "preferred hostname anti-affinity, one pod per node: holds",
			pods: descheduledPods(map[string]int{"n1": 1, "n2": 1}, []string{"n1", "n2"}, apart), rules: soft,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(&policies.Snapshot{Nodes: nodes, Pods: tc.pods}, policies.Options{RecreatingOwners: []string{"ReplicaSet"}, Rules: tc.rules})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			var got []string
			for _, v := range c.Evaluate(c.Current()) {
				if v.Soft && v.Rule != policies.NodeSpread && v.Rule != policies.ZoneBalance {
					got = append(got, string(v.Rule)+" "+v.Domain)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("soft violations (-want +got):\n%s", diff)
			}
			if soft := policies.SoftExcess(c.EvaluateSoft(c.Current(), c.CurrentMasters())); (soft > 0) != (len(tc.want) > 0) {
				t.Errorf("SoftExcess = %d with soft violations %v", soft, tc.want)
			}
		})
	}
}
