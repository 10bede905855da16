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
			for _, f := range Lint(m, Options{Relaxed: tc.relaxed}).Findings {
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
// anti-affinity with the values that restore the recommended constraints, described from the
// rendered template, notes for what the chart cannot express, and budgets that let a drain take
// two pods of a shard. Shards come from Redis (the scenario's RedisNodes).
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
	withValues := func(sc scenario.Scenario, values string) scenario.Scenario {
		sc.BitnamiValues = values
		return sc
	}
	for _, tc := range []struct {
		name  string
		sc    scenario.Scenario
		tweak func(*policies.Snapshot)
		want  []hit
		// in says what the values or a message must contain; notes what the notes must (one
		// string per note).
		in, notes []string
	}{
		{
			name:  "Bitnami post-scale-down, the recommended spread set through the chart's values, 10 pods on 6 nodes → no finding; a note: podAntiAffinityPreset hard would leave 4 Pending",
			sc:    scenario.BitnamiPostScaleDown(),
			notes: []string{"renders only a preferred pod anti-affinity on kubernetes.io/hostname over the release's pods (weight 1: podAntiAffinityPreset: soft, the chart's default)", "10 pods on 6 nodes cannot have (4 would stay Pending)"},
		},
		{
			name: "Bitnami chart defaults (no spread constraints, no node affinity), 10 pods on 6 nodes → the missing constraints, the first carrying the values; a note for the anti-affinity",
			sc:   scenario.BitnamiPostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				spec := &s.StatefulSets[0].Spec.Template.Spec
				spec.TopologySpreadConstraints = nil
				spec.Affinity.NodeAffinity = nil
			},
			want: []hit{{"redis-cluster", MissingConstraint, true}, {"redis-cluster", MissingConstraint, false},
				{"redis-cluster", MissingConstraint, false}, {"redis-cluster", MissingConstraint, false}, {"redis-cluster", NodeAffinity, false}},
			in:    []string{"topology.kubernetes.io/zone", "app.kubernetes.io/instance: redis-cluster"},
			notes: []string{"(4 would stay Pending)"},
		},
		{
			name: "Bitnami, one zone, podAntiAffinityPreset hard (6 pods, 6 nodes) → no finding, no note",
			sc: withValues(small(scenario.LayoutBitnami), "redis: {podAntiAffinityPreset: hard, topologySpreadConstraints: ["+
				"{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app.kubernetes.io/name: redis-cluster, app.kubernetes.io/instance: redis-cluster}}},"+
				"{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app.kubernetes.io/name: redis-cluster, app.kubernetes.io/instance: redis-cluster}}}]}"),
		},
		{
			name: "Bitnami, one zone, soft preset (6 pods, 6 nodes) → SoftAntiAffinity naming the rendered soft preset, whose values set podAntiAffinityPreset hard",
			sc:   small(scenario.LayoutBitnami),
			want: []hit{{"", SoftAntiAffinity, true}},
			in:   []string{"podAntiAffinityPreset: hard", "StatefulSet redis-cluster renders only a preferred pod anti-affinity on kubernetes.io/hostname", "(N=6, 6 nodes)"},
		},
		{
			name: "Bitnami, one zone, podAntiAffinityPreset \"\" (6 pods, 6 nodes) → SoftAntiAffinity saying the template renders no pod anti-affinity",
			sc:   withValues(small(scenario.LayoutBitnami), `redis: {podAntiAffinityPreset: ""}`),
			want: []hit{{"", SoftAntiAffinity, true}, {"redis-cluster", MissingConstraint, false}, {"redis-cluster", MissingConstraint, false}},
			in:   []string{`renders no pod anti-affinity (podAntiAffinityPreset "", or a redis.affinity without one)`},
		},
		{
			name: "Bitnami, one zone, redis.affinity with a preferred zone term (6 pods, 6 nodes) → SoftAntiAffinity listing the rendered terms",
			sc: withValues(small(scenario.LayoutBitnami), "redis: {affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "+
				"[{weight: 50, podAffinityTerm: {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app.kubernetes.io/instance: redis-cluster}}}}]}}}"),
			want: []hit{{"", SoftAntiAffinity, true}, {"redis-cluster", MissingConstraint, false}, {"redis-cluster", MissingConstraint, false}},
			in:   []string{"renders the pod anti-affinity preferred (weight 50) on topology.kubernetes.io/zone over app.kubernetes.io/instance=redis-cluster (redis.affinity)"},
		},
		{
			name: "Bitnami, 3 zones, podAntiAffinityPreset hard rendered (10 pods, 12 nodes) → no finding; a note: no value keeps a shard out of one zone",
			sc: withValues(scenario.Scenario{Layout: scenario.LayoutBitnami, Cluster: "redis-cluster", Shards: 5, PodsPerShard: 2, Zones: []scenario.Zone{
				{Name: "zone-a", Nodes: []string{"n1", "n2", "n3", "n4"}}, {Name: "zone-b", Nodes: []string{"n5", "n6", "n7", "n8"}}, {Name: "zone-c", Nodes: []string{"n9", "n10", "n11", "n12"}},
			}}.Placed([][]string{{"n1", "n5"}, {"n2", "n9"}, {"n6", "n10"}, {"n3", "n7"}, {"n11", "n4"}}), bitnamiRecommended(t, 10, 12, []string{"zone-a", "zone-b", "zone-c"})),
			notes: []string{"renders a required pod anti-affinity on kubernetes.io/hostname over the release's pods (podAntiAffinityPreset: hard), which keeps a shard's pods off one node; no value of the chart names a shard, so none keeps a shard's pods out of one zone"},
		},
		{
			name: "Bitnami under the alias sessions of the umbrella release web, one zone, soft preset (6 pods, 6 nodes) → told by its labels and REDIS_NODES: SoftAntiAffinity whose values select app.kubernetes.io/name sessions",
			sc: func() scenario.Scenario {
				sc := small(scenario.LayoutBitnami)
				sc.Cluster, sc.BitnamiAlias = "web", "sessions"
				return sc.Placed([][]string{{"n1", "n4"}, {"n2", "n5"}, {"n3", "n6"}})
			}(),
			want: []hit{{"", SoftAntiAffinity, true}},
			in:   []string{"podAntiAffinityPreset: hard", "app.kubernetes.io/name: sessions", "app.kubernetes.io/instance: web", "StatefulSet web-sessions renders only a preferred pod anti-affinity"},
		},
		{
			name: "Bitnami, pdb.maxUnavailable 2 → DisruptionBudget naming the release's budget",
			sc:   scenario.BitnamiPostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				s.PodDisruptionBudgets[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			want:  []hit{{"", DisruptionBudget, false}},
			in:    []string{"redis-cluster (maxUnavailable 2)", "5 shards", "pdb.maxUnavailable: 1"},
			notes: []string{"Pending"},
		},
		{
			name: "OT post-scale-down, a PDB per role → SoftAntiAffinity with the RedisCluster's fields, DisruptionBudget with the cluster's budget",
			sc:   scenario.OTPostScaleDown(),
			want: []hit{{"", SoftAntiAffinity, true}, {"", DisruptionBudget, true}},
			in: []string{"redis-cluster-follower, redis-cluster-leader", "redisLeader:", "redisFollower:", OTAntiAffinityAnnotation + `: "true"`,
				"kind: PodDisruptionBudget", "cluster: redis-cluster", "maxUnavailable: 1", "no RedisCluster field keeps them out of one zone"},
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
			rep := Lint(m, Options{})
			for _, f := range rep.Findings {
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
			checkNotes(t, rep.Notes, tc.notes)
		})
	}
}

// checkNotes wants as many notes as want has strings, the notes holding them all.
func checkNotes(t *testing.T, notes, want []string) {
	t.Helper()
	for _, n := range notes {
		t.Logf("note: %s", n)
	}
	if len(want) > 0 && len(notes) != 1 || len(want) == 0 && len(notes) != 0 {
		t.Errorf("%d notes %q, want %d", len(notes), notes, min(len(want), 1))
		return
	}
	for _, s := range want {
		if !strings.Contains(strings.Join(notes, "\n"), s) {
			t.Errorf("no note says %q", s)
		}
	}
}

// bitnamiRecommended returns the values `constraints --layout bitnami` prints for n pods on nodes
// nodes in zones (ChartValues), as a values file.
func bitnamiRecommended(t *testing.T, n, nodes int, zones []string) string {
	t.Helper()
	v, err := ChartValues(ChartInput{Chart: ChartBitnami, Selector: SelectorOf(ChartBitnami, "redis-cluster"), N: n, Nodes: nodes,
		Zones: zones, ZoneKey: corev1.LabelTopologyZone})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLintChartsWithoutShards: with shards from Redis and Redis not read (offline without
// --redis-nodes), a chart's cluster has no known shard; its soft anti-affinity is still judged
// (nothing required keeps any two pods apart): OT's a finding, Bitnami's with 10 pods on 6 nodes
// a note (no value can help); nothing is said about masters or budgets.
func TestLintChartsWithoutShards(t *testing.T) {
	for _, tc := range []struct {
		sc    scenario.Scenario
		want  []Kind
		notes []string
	}{
		{sc: scenario.BitnamiPostScaleDown(), notes: []string{"(4 would stay Pending)"}},
		{sc: scenario.OTPostScaleDown(), want: []Kind{SoftAntiAffinity}},
	} {
		t.Run(tc.sc.Name+", Redis not read → the anti-affinity only", func(t *testing.T) {
			m, err := policies.Build(tc.sc.MustSnapshot(), policies.Options{ClusterLabel: tc.sc.ClusterLabel(), ShardSource: policies.ShardSource{Kind: policies.ShardRedis}})
			if err != nil {
				t.Fatal(err)
			}
			var got []Kind
			rep := Lint(m, Options{})
			for _, f := range rep.Findings {
				got = append(got, f.Kind)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			checkNotes(t, rep.Notes, tc.notes)
		})
	}
}

// TestLintChartsAdviceApplied applies what lint's findings advise, as the chart or the operator
// would render it (Bitnami: the redis.* values into the StatefulSet's template, pdb.maxUnavailable
// into the release's budget; OT: spec.redisLeader/redisFollower into the leader and follower
// StatefulSets, the role anti-affinity annotation as its webhook's term on each pod's partner, the
// cluster's PodDisruptionBudget instead of the per-role ones), lints again, and wants no finding:
// what the chart cannot express (a shard's pods out of one zone, no value naming a shard; for
// Bitnami, a node per pod with more pods than nodes) is a note.
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
		// notes are what the notes say once the advice is applied.
		notes []string
	}{
		{
			name: "Bitnami chart defaults, pdb.maxUnavailable 2, 3 zones, 10 pods on 6 nodes → no finding left; a note: a node per pod would leave 4 Pending",
			sc:   scenario.BitnamiPostScaleDown(),
			tweak: func(s *policies.Snapshot) {
				bare(s)
				s.PodDisruptionBudgets[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			notes: []string{"(4 would stay Pending)"},
		},
		{
			name:  "Bitnami chart defaults, one zone, 6 pods on 6 nodes → no finding left, no note",
			sc:    small(scenario.LayoutBitnami),
			tweak: bare,
		},
		{
			name: "Bitnami chart defaults, 3 zones, 6 pods on 6 nodes → no finding left; a note: no value keeps a shard out of one zone",
			sc: scenario.Scenario{Layout: scenario.LayoutBitnami, Cluster: "redis-cluster", Zones: scenario.ThreeZones(), Shards: 3, PodsPerShard: 2}.Placed([][]string{
				{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"},
			}),
			tweak: bare,
			notes: []string{"podAntiAffinityPreset: hard), which keeps a shard's pods off one node", "none keeps a shard's pods out of one zone"},
		},
		{
			name:  "OT post-scale-down, a budget per role, 3 zones → no finding left; a note: no field keeps a shard out of one zone",
			sc:    scenario.OTPostScaleDown(),
			tweak: bare,
			notes: []string{"no RedisCluster field names a shard, so none keeps a shard's pods out of one zone"},
		},
		{
			name:  "OT, one zone, a budget per role → no finding left, no note",
			sc:    small(scenario.LayoutOT),
			tweak: bare,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.sc.MustSnapshot()
			tc.tweak(snap)
			lintSnap := func() Report {
				t.Helper()
				m, err := policies.Build(snap, policies.Options{ClusterLabel: tc.sc.ClusterLabel()})
				if err != nil {
					t.Fatal(err)
				}
				m.Clusters[0].ApplyRedis(tc.sc.RedisNodes())
				return Lint(m, Options{})
			}
			before := lintSnap().Findings
			if len(before) == 0 {
				t.Fatal("before: no finding")
			}
			for _, f := range before {
				t.Logf("before: %s: %s", f.Kind, f.Message)
				applyAdvice(t, snap, f)
			}
			after := lintSnap()
			var left []Kind
			for _, f := range after.Findings {
				t.Logf("after: %s: %s", f.Kind, f.Message)
				left = append(left, f.Kind)
			}
			if len(left) > 0 {
				t.Errorf("findings once their advice is applied: %v, want none", left)
			}
			checkNotes(t, after.Notes, tc.notes)
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

// TestLintRules: a finding whose rule the policy does not judge is left out (--disable-rules,
// rules.disabled), its values moving to the next finding; DisruptionBudget, which no rule judges,
// stays; the note on the anti-affinity goes with ShardSeparation.
func TestLintRules(t *testing.T) {
	bare := func(s *policies.Snapshot) {
		spec := &s.StatefulSets[0].Spec.Template.Spec
		spec.TopologySpreadConstraints = nil
		spec.Affinity.NodeAffinity = nil
		s.PodDisruptionBudgets[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	}
	off := func(rules ...policies.Rule) map[policies.Rule]policies.RuleSetting {
		out := map[policies.Rule]policies.RuleSetting{}
		for _, r := range rules {
			info, _ := policies.LookupRule(r)
			out[r] = policies.RuleSetting{Enabled: false, Soft: info.Soft}
		}
		return out
	}
	type hit struct {
		Kind   Kind
		Rule   policies.Rule
		Values bool
	}
	for _, tc := range []struct {
		name     string
		sc       scenario.Scenario
		disabled map[policies.Rule]policies.RuleSetting
		want     []hit
		notes    int
	}{
		{
			name: "Bitnami chart defaults, every rule judged → each finding names its rule; the anti-affinity a note",
			sc:   scenario.BitnamiPostScaleDown(),
			want: []hit{{DisruptionBudget, "", false}, {MissingConstraint, policies.MaxPodsPerNode, true}, {MissingConstraint, policies.MaxPodsPerZone, false},
				{MissingConstraint, policies.ZoneBalance, false}, {MissingConstraint, policies.NodeSpread, false}, {NodeAffinity, policies.AllowedZones, false}},
			notes: 1,
		},
		{
			name:     "MaxPodsPerNode, ZoneBalance and NodeSpread disabled → their constraints unasked for, the values on the zone's",
			sc:       scenario.BitnamiPostScaleDown(),
			disabled: off(policies.MaxPodsPerNode, policies.ZoneBalance, policies.NodeSpread),
			want:     []hit{{DisruptionBudget, "", false}, {MissingConstraint, policies.MaxPodsPerZone, true}, {NodeAffinity, policies.AllowedZones, false}},
			notes:    1,
		},
		{
			name:     "ShardSeparation and AllowedZones disabled → no note, no NodeAffinity",
			sc:       scenario.BitnamiPostScaleDown(),
			disabled: off(policies.ShardSeparation, policies.AllowedZones, policies.MaxPodsPerZone),
			want: []hit{{DisruptionBudget, "", false}, {MissingConstraint, policies.MaxPodsPerNode, true},
				{MissingConstraint, policies.ZoneBalance, false}, {MissingConstraint, policies.NodeSpread, false}},
		},
		{
			name:     "OT with ShardSeparation disabled → no SoftAntiAffinity; MasterQuorum disabled → none for 2 zones",
			sc:       scenario.Scenario{Layout: scenario.LayoutOT, Cluster: "redis-cluster", Zones: scenario.ThreeZones()[:2], Shards: 3, PodsPerShard: 2}.Placed([][]string{{"n1", "n3"}, {"n2", "n4"}, {"n3", "n1"}}),
			disabled: off(policies.ShardSeparation, policies.MasterQuorum),
			want:     []hit{{DisruptionBudget, "", true}},
		},
		{
			name: "OT in 2 zones, every rule judged → MasterQuorum (no placement survives a zone's loss), SoftAntiAffinity, DisruptionBudget",
			sc:   scenario.Scenario{Layout: scenario.LayoutOT, Cluster: "redis-cluster", Zones: scenario.ThreeZones()[:2], Shards: 3, PodsPerShard: 2}.Placed([][]string{{"n1", "n3"}, {"n2", "n4"}, {"n3", "n1"}}),
			want: []hit{{MasterQuorum, policies.MasterQuorum, false}, {SoftAntiAffinity, policies.ShardSeparation, true}, {DisruptionBudget, "", true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.sc.MustSnapshot()
			if tc.sc.Layout == scenario.LayoutBitnami {
				bare(snap)
			}
			m, err := policies.Build(snap, policies.Options{ClusterLabel: tc.sc.ClusterLabel(), Rules: tc.disabled})
			if err != nil {
				t.Fatal(err)
			}
			m.Clusters[0].ApplyRedis(tc.sc.RedisNodes())
			rep := Lint(m, Options{})
			var got []hit
			for _, f := range rep.Findings {
				got = append(got, hit{f.Kind, f.Rule, f.Values != ""})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if len(rep.Notes) != tc.notes {
				t.Errorf("notes %q, want %d", rep.Notes, tc.notes)
			}
		})
	}
}

// TestLintDeadlockNeedsZoneAntiAffinity: 3 shards over 3 zones with the strict hostname maxSkew
// deadlock only with a required anti-affinity on the zone inside each shard (the seed layout's);
// Bitnami's chart, which has none, gets no DeadlockRisk from the values constraints prints.
func TestLintDeadlockNeedsZoneAntiAffinity(t *testing.T) {
	bitnami := scenario.Scenario{Layout: scenario.LayoutBitnami, Cluster: "redis-cluster", Zones: scenario.ThreeZones(), Shards: 3, PodsPerShard: 2,
		BitnamiValues: bitnamiRecommended(t, 6, 6, []string{"zone-a", "zone-b", "zone-c"})}.Placed([][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"}})
	for _, tc := range []struct {
		name string
		sc   scenario.Scenario
		want int // DeadlockRisk findings
	}{
		{"seed, zone anti-affinity in every shard → DeadlockRisk on each StatefulSet", scenario.SeedDeadlock(), 3},
		{"Bitnami, the values constraints prints (hostname maxSkew 1, no zone anti-affinity) → none", bitnami, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(tc.sc.MustSnapshot(), policies.Options{ClusterLabel: tc.sc.ClusterLabel()})
			if err != nil {
				t.Fatal(err)
			}
			if tc.sc.Layout != scenario.LayoutSeed {
				m.Clusters[0].ApplyRedis(tc.sc.RedisNodes())
			}
			n := 0
			for _, f := range Lint(m, Options{}).Findings {
				t.Logf("%s: %s", f.Kind, f.Message)
				if f.Kind == DeadlockRisk {
					n++
				}
			}
			if n != tc.want {
				t.Errorf("%d DeadlockRisk findings, want %d", n, tc.want)
			}
		})
	}
}

// TestLintValuesPath: with a values path (an umbrella chart's key for the subchart), Bitnami's
// values are nested under it and its fixes name the nested keys; OT's fields are refused one.
func TestLintValuesPath(t *testing.T) {
	sc := scenario.BitnamiPostScaleDown()
	snap := sc.MustSnapshot()
	spec := &snap.StatefulSets[0].Spec.Template.Spec
	spec.TopologySpreadConstraints = nil
	snap.PodDisruptionBudgets[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	m, err := policies.Build(snap, policies.Options{ClusterLabel: sc.ClusterLabel()})
	if err != nil {
		t.Fatal(err)
	}
	m.Clusters[0].ApplyRedis(sc.RedisNodes())
	path, err := ParseValuesPath("backend.redis-cluster")
	if err != nil {
		t.Fatal(err)
	}
	var values, messages string
	for _, f := range Lint(m, Options{ValuesPath: path}).Findings {
		values += f.Values
		messages += f.Message + "\n"
	}
	var v map[string]map[string]map[string]map[string]any
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		t.Fatalf("values %q: %v", values, err)
	}
	if _, ok := v["backend"]["redis-cluster"]["redis"]["topologySpreadConstraints"]; !ok {
		t.Errorf("values not nested under backend.redis-cluster:\n%s", values)
	}
	if !strings.Contains(messages, "set the chart's backend.redis-cluster.pdb.maxUnavailable: 1") {
		t.Errorf("the budget's fix does not name the nested key:\n%s", messages)
	}
	for _, bad := range []string{"a..b", ".a", "a."} {
		if _, err := ParseValuesPath(bad); err == nil || !strings.Contains(err.Error(), "an empty key") {
			t.Errorf("ParseValuesPath(%q): %v, want an empty key refused", bad, err)
		}
	}
	if _, err := ChartValues(ChartInput{Chart: ChartOT, Selector: SelectorOf(ChartOT, "rc"), N: 6, ValuesPath: path}); err == nil {
		t.Error("OT's fields nested under a values path: no error")
	}
}
