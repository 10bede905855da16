package lint

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

func TestLint(t *testing.T) {
	type hit struct {
		StatefulSet string
		Kind        Kind
	}
	for _, tc := range []struct {
		name    string
		sc      scenario.Scenario
		relaxed bool
		tweak   func(*policies.Snapshot)
		want    []hit
	}{
		{name: "post-scale-down templates as generated → no finding", sc: scenario.PostScaleDown()},
		{
			name: "3 shards on 3 zones, strict node maxSkew 1 → deadlock risk on every StatefulSet",
			sc:   scenario.SeedDeadlock(),
			want: []hit{{"redis-s0", DeadlockRisk}, {"redis-s1", DeadlockRisk}, {"redis-s2", DeadlockRisk}},
		},
		{name: "3 shards on 3 zones, relaxed recommendation, templates strict → maxSkew differs", sc: scenario.SeedDeadlock(), relaxed: true,
			want: []hit{{"redis-s0", MaxSkew}, {"redis-s0", MaxSkew}, {"redis-s1", MaxSkew}, {"redis-s1", MaxSkew}, {"redis-s2", MaxSkew}, {"redis-s2", MaxSkew}}},
		{
			name: "template still carries N=12 maxSkew after scale-down to N=10 → MaxSkew",
			sc:   scenario.PostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				s.StatefulSets[0].Spec.Template.Spec.TopologySpreadConstraints[0].MaxSkew = 3 // N=12: 12/3-1
				s.StatefulSets[0].Spec.Template.Spec.TopologySpreadConstraints[1].MaxSkew = 5 // N=12: 12/2-1
			},
			want: []hit{{"redis-s0", MaxSkew}},
		},
		{
			name: "anti-affinity removed from one shard → AntiAffinity",
			sc:   scenario.PostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				s.StatefulSets[2].Spec.Template.Spec.Affinity.PodAntiAffinity = nil
			},
			want: []hit{{"redis-s2", AntiAffinity}},
		},
		{
			name: "soft hostname constraint dropped → MissingConstraint",
			sc:   scenario.PostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				spec := &s.StatefulSets[1].Spec.Template.Spec
				var keep []corev1.TopologySpreadConstraint
				for _, c := range spec.TopologySpreadConstraints {
					if !(c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.ScheduleAnyway) {
						keep = append(keep, c)
					}
				}
				spec.TopologySpreadConstraints = keep
			},
			want: []hit{{"redis-s1", MissingConstraint}},
		},
		{
			name: "2 zones, 4 shards → MasterQuorum once for the cluster: no placement survives a zone's loss",
			sc:   scenario.TwoZones(),
			want: []hit{{"", MasterQuorum}},
		},
		{
			name: "3 zones, 4 shards (M=4: some zone holds 2 masters) → MasterQuorum once for the cluster",
			sc: scenario.Scenario{Zones: scenario.ThreeZones(), Shards: 4, PodsPerShard: 2}.Placed([][]string{
				{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"}, {"n5", "n2"},
			}),
			want: []hit{{"", MasterQuorum}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.sc.MustSnapshot()
			if tc.tweak != nil {
				tc.tweak(snap)
			}
			m, err := policies.Build(snap, policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []hit
			for _, f := range Lint(m, tc.relaxed) {
				got = append(got, hit{f.StatefulSet, f.Kind})
				t.Log(f.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLintCharts checks the findings on clusters that Bitnami's chart and OT's operator wrote: soft
// anti-affinity with the values that restore the recommended constraints, and budgets that let a
// drain take two pods of a shard. Shards come from Redis (the scenario's RedisNodes).
func TestLintCharts(t *testing.T) {
	type hit struct {
		StatefulSet string
		Kind        Kind
		Values      bool
	}
	oneZone := []scenario.Zone{{Name: "zone-a", Nodes: []string{"n1", "n2", "n3", "n4", "n5", "n6"}}}
	small := func(l scenario.Layout) scenario.Scenario {
		return scenario.Scenario{Layout: l, Cluster: "redis-cluster", Zones: oneZone, Shards: 3, PodsPerShard: 2}.Placed([][]string{
			{"n1", "n4"}, {"n2", "n5"}, {"n3", "n6"},
		})
	}
	for _, tc := range []struct {
		name  string
		sc    scenario.Scenario
		tweak func(*policies.Snapshot)
		want  []hit
		// in says what the values or a message must contain.
		in []string
	}{
		{
			name: "Bitnami post-scale-down, the recommended spread set through the chart's values → SoftAntiAffinity with values, without podAntiAffinityPreset hard (10 pods, 6 nodes)",
			sc:   scenario.BitnamiPostScaleDown(),
			want: []hit{{"", SoftAntiAffinity, true}},
			in:   []string{"topologySpreadConstraints:", "maxSkew: 3", "maxSkew: 4", "nodeAffinityPreset:", "would leave 4 Pending"},
		},
		{
			name: "Bitnami chart defaults (no spread constraints, no node affinity) → the missing constraints and SoftAntiAffinity, whose values add them",
			sc:   scenario.BitnamiPostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				spec := &s.StatefulSets[0].Spec.Template.Spec
				spec.TopologySpreadConstraints = nil
				spec.Affinity.NodeAffinity = nil
			},
			want: []hit{{"", SoftAntiAffinity, true}, {"redis-cluster", MissingConstraint, false}, {"redis-cluster", MissingConstraint, false},
				{"redis-cluster", MissingConstraint, false}, {"redis-cluster", MissingConstraint, false}, {"redis-cluster", NodeAffinity, false}},
			in: []string{"topology.kubernetes.io/zone", "app.kubernetes.io/instance: redis-cluster"},
		},
		{
			name: "Bitnami, one zone, podAntiAffinityPreset hard (6 pods, 6 nodes) → no finding",
			sc:   small(scenario.LayoutBitnami),
			tweak: func(s *policies.Snapshot) {
				spec := &s.StatefulSets[0].Spec.Template.Spec
				spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					fixture.Term(corev1.LabelHostname, map[string]string{scenario.AppLabel: "redis-cluster", scenario.BitnamiInstanceLabel: "redis-cluster"}),
				}}
			},
		},
		{
			name: "Bitnami, one zone, soft preset (6 pods, 6 nodes) → SoftAntiAffinity whose values set podAntiAffinityPreset hard",
			sc:   small(scenario.LayoutBitnami),
			want: []hit{{"", SoftAntiAffinity, true}},
			in:   []string{"podAntiAffinityPreset: hard"},
		},
		{
			name: "Bitnami, pdb.maxUnavailable 2 → DisruptionBudget naming the release's budget",
			sc:   scenario.BitnamiPostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				s.PodDisruptionBudgets[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			want: []hit{{"", SoftAntiAffinity, true}, {"", DisruptionBudget, false}},
			in:   []string{"redis-cluster (maxUnavailable 2)", "5 shards", "pdb.maxUnavailable: 1"},
		},
		{
			name: "OT post-scale-down, a PDB per role → SoftAntiAffinity with the RedisCluster's fields, DisruptionBudget with the cluster's budget",
			sc:   scenario.OTPostScaleDown(),
			want: []hit{{"", SoftAntiAffinity, true}, {"", DisruptionBudget, true}},
			in: []string{"redis-cluster-follower, redis-cluster-leader", "redisLeader:", "redisFollower:", OTAntiAffinityAnnotation + `: "true"`,
				"kind: PodDisruptionBudget", "cluster: redis-cluster", "maxUnavailable: 1"},
		},
		{
			name: "OT, one zone, the webhook's anti-affinity in every pod, one budget for the cluster → no finding",
			sc:   small(scenario.LayoutOT),
			tweak: func(s *policies.Snapshot) {
				for _, p := range s.Pods {
					partner := strings.NewReplacer("leader", "follower", "follower", "leader").Replace(p.Name)
					fixture.AntiAffinity(corev1.LabelHostname, map[string]string{appsv1.StatefulSetPodNameLabel: partner})(p)
				}
				s.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{fixture.PodDisruptionBudget("redis-cluster",
					&metav1.LabelSelector{MatchLabels: map[string]string{scenario.OTClusterLabel: "redis-cluster"}})}
			},
		},
		{
			name: "OT, PDBs with the operator's default minAvailable (3 of 5 per role) → DisruptionBudget",
			sc:   scenario.OTPostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				for _, b := range s.PodDisruptionBudgets {
					b.Spec.MaxUnavailable, b.Spec.MinAvailable = nil, ptr.To(intstr.FromInt32(3))
				}
			},
			want: []hit{{"", SoftAntiAffinity, true}, {"", DisruptionBudget, true}},
		},
		{
			name:  "seed post-scale-down without PodDisruptionBudgets → DisruptionBudget once for the 5 shards",
			sc:    scenario.PostScaleDown(),
			tweak: func(s *policies.Snapshot) { s.PodDisruptionBudgets = nil },
			want:  []hit{{"", DisruptionBudget, false}},
			in:    []string{"no PodDisruptionBudget selects two pods of 5 shards"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.sc.MustSnapshot()
			if tc.tweak != nil {
				tc.tweak(snap)
			}
			m, err := policies.Build(snap, policies.Options{ClusterLabel: tc.sc.ClusterLabel()})
			if err != nil {
				t.Fatal(err)
			}
			if tc.sc.Layout != scenario.LayoutSeed {
				m.Clusters[0].ApplyRedis(tc.sc.RedisNodes())
			}
			var got []hit
			var text strings.Builder
			for _, f := range Lint(m, false) {
				got = append(got, hit{f.StatefulSet, f.Kind, f.Values != ""})
				t.Logf("%s: %s\n%s", f.Kind, f.Message, f.Values)
				text.WriteString(f.Message + "\n" + f.Values)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			for _, s := range tc.in {
				if !strings.Contains(text.String(), s) {
					t.Errorf("no finding says %q", s)
				}
			}
		})
	}
}

// TestLintChartsWithoutShards: with shards from Redis and Redis not read (offline without
// --redis-nodes), a chart's cluster has no known shard; its soft anti-affinity is still a
// finding (nothing required keeps any two pods apart), and nothing is said about masters or
// budgets.
func TestLintChartsWithoutShards(t *testing.T) {
	for _, sc := range []scenario.Scenario{scenario.BitnamiPostScaleDown(), scenario.OTPostScaleDown()} {
		t.Run(sc.Name+", Redis not read → SoftAntiAffinity only", func(t *testing.T) {
			m, err := policies.Build(sc.MustSnapshot(), policies.Options{ClusterLabel: sc.ClusterLabel(), ShardSource: policies.ShardSource{Kind: policies.ShardRedis}})
			if err != nil {
				t.Fatal(err)
			}
			var got []Kind
			for _, f := range Lint(m, false) {
				got = append(got, f.Kind)
			}
			if diff := cmp.Diff([]Kind{SoftAntiAffinity}, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLintChartsAdviceApplied applies what lint's findings advise, as the chart or the operator
// would render it (Bitnami: the redis.* values into the StatefulSet's template, pdb.maxUnavailable
// into the release's budget; OT: spec.redisLeader/redisFollower into the leader and follower
// StatefulSets, the role anti-affinity annotation as its webhook's term on each pod's partner, the
// cluster's PodDisruptionBudget instead of the per-role ones), lints again, and wants only what the
// chart cannot express: SoftAntiAffinity when a shard's pods must be kept out of one zone (no
// value names a shard) or, for Bitnami, out of one node with more pods than nodes.
func TestLintChartsAdviceApplied(t *testing.T) {
	oneZone := []scenario.Zone{{Name: "zone-a", Nodes: []string{"n1", "n2", "n3", "n4", "n5", "n6"}}}
	small := func(l scenario.Layout) scenario.Scenario {
		return scenario.Scenario{Layout: l, Cluster: "redis-cluster", Zones: oneZone, Shards: 3, PodsPerShard: 2}.Placed([][]string{
			{"n1", "n4"}, {"n2", "n5"}, {"n3", "n6"},
		})
	}
	bare := func(s *policies.Snapshot) { // the chart's defaults: no spread constraints, no node affinity
		for _, sts := range s.StatefulSets {
			sts.Spec.Template.Spec.TopologySpreadConstraints = nil
			if a := sts.Spec.Template.Spec.Affinity; a != nil {
				a.NodeAffinity = nil
			}
		}
	}
	for _, tc := range []struct {
		name  string
		sc    scenario.Scenario
		tweak func(*policies.Snapshot)
		// left is what remains once the advice is applied.
		left []Kind
	}{
		{
			name: "Bitnami chart defaults, pdb.maxUnavailable 2, 3 zones, 10 pods on 6 nodes → only SoftAntiAffinity left",
			sc:   scenario.BitnamiPostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				bare(s)
				s.PodDisruptionBudgets[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			left: []Kind{SoftAntiAffinity},
		},
		{
			name:  "Bitnami chart defaults, one zone, 6 pods on 6 nodes → no finding left",
			sc:    small(scenario.LayoutBitnami),
			tweak: bare,
		},
		{
			name:  "OT post-scale-down, a budget per role, 3 zones → only SoftAntiAffinity left",
			sc:    scenario.OTPostScaleDown(),
			tweak: bare,
			left:  []Kind{SoftAntiAffinity},
		},
		{
			name:  "OT, one zone, a budget per role → no finding left",
			sc:    small(scenario.LayoutOT),
			tweak: bare,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.sc.MustSnapshot()
			tc.tweak(snap)
			lintSnap := func() []Finding {
				t.Helper()
				m, err := policies.Build(snap, policies.Options{ClusterLabel: tc.sc.ClusterLabel()})
				if err != nil {
					t.Fatal(err)
				}
				m.Clusters[0].ApplyRedis(tc.sc.RedisNodes())
				return Lint(m, false)
			}
			before := lintSnap()
			if len(before) <= len(tc.left) {
				t.Fatalf("before: %d findings, want more than what is left (%v)", len(before), tc.left)
			}
			for _, f := range before {
				t.Logf("before: %s: %s", f.Kind, f.Message)
				applyAdvice(t, snap, f)
			}
			var left []Kind
			for _, f := range lintSnap() {
				t.Logf("after: %s: %s", f.Kind, f.Message)
				left = append(left, f.Kind)
			}
			if diff := cmp.Diff(tc.left, left); diff != "" {
				t.Errorf("findings once their advice is applied (-want +got):\n%s", diff)
			}
		})
	}
}

// applyAdvice applies finding f's advice to snap as the chart or operator renders it: Bitnami's
// redis.topologySpreadConstraints, redis.nodeAffinityPreset (hard: required node affinity In
// the values), redis.podAntiAffinityPreset hard (a required anti-affinity on the hostname over
// the release's pods) and pdb.maxUnavailable; OT's spec.redisLeader/redisFollower fields, its role
// anti-affinity annotation (the webhook's term against the partner pod, on the hostname) and the
// PodDisruptionBudget to create in place of the per-role ones.
func applyAdvice(t *testing.T, snap *policies.Snapshot, f Finding) {
	t.Helper()
	if strings.Contains(f.Message, "pdb.maxUnavailable: 1") {
		for _, b := range snap.PodDisruptionBudgets {
			b.Spec.MaxUnavailable, b.Spec.MinAvailable = ptr.To(intstr.FromInt32(1)), nil
		}
	}
	if f.Values == "" {
		return
	}
	spec := func(sts *appsv1.StatefulSet) *corev1.PodSpec {
		s := &sts.Spec.Template.Spec
		if s.Affinity == nil {
			s.Affinity = &corev1.Affinity{}
		}
		return s
	}
	if strings.Contains(f.Values, "kind: PodDisruptionBudget") {
		var pdb policyv1.PodDisruptionBudget
		if err := yaml.UnmarshalStrict([]byte(f.Values), &pdb); err != nil {
			t.Fatalf("%s values: %v", f.Kind, err)
		}
		snap.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{&pdb}
		return
	}
	switch {
	case strings.HasPrefix(f.Values, "redis:"):
		var v struct {
			Redis struct {
				TopologySpreadConstraints []corev1.TopologySpreadConstraint
				NodeAffinityPreset        struct {
					Type, Key string
					Values    []string
				}
				PodAntiAffinityPreset string
			}
		}
		if err := yaml.UnmarshalStrict([]byte(f.Values), &v); err != nil {
			t.Fatalf("%s values: %v", f.Kind, err)
		}
		for _, sts := range snap.StatefulSets {
			s := spec(sts)
			s.TopologySpreadConstraints = v.Redis.TopologySpreadConstraints
			if p := v.Redis.NodeAffinityPreset; p.Type == "hard" {
				s.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: p.Key, Operator: corev1.NodeSelectorOpIn, Values: p.Values},
					}}},
				}}
			}
			if v.Redis.PodAntiAffinityPreset == "hard" {
				s.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					fixture.Term(corev1.LabelHostname, sts.Spec.Selector.MatchLabels),
				}}
			}
		}
	default:
		type role struct {
			TopologySpreadConstraints []corev1.TopologySpreadConstraint
			Affinity                  *corev1.Affinity
		}
		var v struct {
			Metadata struct{ Annotations map[string]string }
			Spec     struct{ RedisLeader, RedisFollower role }
		}
		if err := yaml.UnmarshalStrict([]byte(f.Values), &v); err != nil {
			t.Fatalf("%s values: %v", f.Kind, err)
		}
		for _, sts := range snap.StatefulSets {
			r := v.Spec.RedisLeader
			if sts.Spec.Template.Labels[otRoleLabel] == "follower" {
				r = v.Spec.RedisFollower
			}
			s := spec(sts)
			s.TopologySpreadConstraints = r.TopologySpreadConstraints
			if r.Affinity != nil {
				s.Affinity.NodeAffinity = r.Affinity.NodeAffinity
			}
		}
		if v.Metadata.Annotations[OTAntiAffinityAnnotation] == "true" {
			for _, p := range snap.Pods {
				partner := strings.NewReplacer("leader", "follower", "follower", "leader").Replace(p.Name)
				fixture.AntiAffinity(corev1.LabelHostname, map[string]string{appsv1.StatefulSetPodNameLabel: partner})(p)
			}
		}
	}
}
