package lint

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
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
