package policies_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// only keeps the hits of the given rules.
func only(hs []hit, rules ...policies.Rule) []hit {
	var out []hit
	for _, h := range hs {
		for _, r := range rules {
			if h.Rule == r {
				out = append(out, h)
			}
		}
	}
	return out
}

// TestEvaluateHARules covers the HA rules on clusters built as the operator
// builds them (constraints.Generate), at their boundaries: N divisible by 3 or 2 or not, relaxed
// limits on and off, Z = 0, 1, 2, 3, 4, the legacy zone label, nodes without a zone label, and N
// from StatefulSet replicas.
func TestEvaluateHARules(t *testing.T) {
	threeZones := func() []*corev1.Node { return fixture.ZonedNodes(2, "a", "b", "c") }
	oneZone := func(n int) []*corev1.Node { return fixture.ZonedNodes(n, "a") }
	for _, tc := range []struct {
		name     string
		nodes    []*corev1.Node
		cluster  redisCluster
		opts     policies.Options
		hardOnly bool
		rules    []policies.Rule // when set, compare only these rules
		want     []hit
		wantZ    int
		wantKey  string // the cluster's ZoneKey, when set
	}{
		{
			name:  "Z=3, N=6, one pod per node, shards across zones → compliant (no hard or soft violation)",
			nodes: threeZones(),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"},
				place: [][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"}}},
			wantZ: 3,
		},
		{
			name:  "Z=3, N=6, shard 0 in zone-a twice (n1, n2) → ShardSeparation zone-a",
			nodes: threeZones(),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"},
				place: [][]string{{"n1", "n2"}, {"n3", "n5"}, {"n4", "n6"}}},
			hardOnly: true,
			want:     []hit{{policies.ShardSeparation, "zone-a", 2, 1, false}},
			wantZ:    3,
		},
		{
			// One zone: anti-affinity and ShardSeparation on the hostname; node maxSkew 1 and n6 is
			// empty, so n1's 2 pods have skew 2.
			name:  "Z=1 (zone list of one zone), N=6, shard 0 twice on n1 → ShardSeparation n1, MaxPodsPerNode n1 2/1, TopologySpread n1 skew 2/1",
			nodes: oneZone(6),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"},
				place: [][]string{{"n1", "n1"}, {"n2", "n3"}, {"n4", "n5"}}},
			want: []hit{
				{policies.MaxPodsPerNode, "n1", 2, 1, false},
				{policies.ShardSeparation, "n1", 2, 1, false},
				{policies.TopologySpread, "n1", 2, 1, false},
			},
			wantZ: 1,
		},
		{
			name:  "Z=0 (no zone labels, no zone list), N=6, n1 holds 2 pods of two shards → MaxPodsPerNode n1 2/1, TopologySpread n1",
			nodes: []*corev1.Node{fixture.Node("n1"), fixture.Node("n2"), fixture.Node("n3"), fixture.Node("n4"), fixture.Node("n5"), fixture.Node("n6")},
			cluster: redisCluster{shards: 3, perShard: 2,
				place: [][]string{{"n1", "n2"}, {"n1", "n3"}, {"n4", "n5"}}},
			want: []hit{
				{policies.MaxPodsPerNode, "n1", 2, 1, false},
				{policies.TopologySpread, "n1", 2, 1, false},
			},
			wantZ: 0,
		},
		{
			name:  "N=6 (3 | N) relaxed: a node may hold 2 (at most N/3), maxSkew 2 → n1 with 2 pods complies",
			nodes: oneZone(6),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"}, relaxed: true,
				place: [][]string{{"n1", "n2"}, {"n1", "n3"}, {"n4", "n5"}}},
			opts:  policies.Options{RelaxedLimits: true},
			wantZ: 1,
		},
		{
			name:  "N=8 (3 ∤ N) strict: at most 2 per node (fewer than 8/3); n1 holds 3 → MaxPodsPerNode n1 3/2, TopologySpread n1 3/2",
			nodes: oneZone(8),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a"},
				place: [][]string{{"n1", "n2"}, {"n1", "n3"}, {"n1", "n4"}, {"n5", "n6"}}},
			want: []hit{
				{policies.MaxPodsPerNode, "n1", 3, 2, false},
				{policies.TopologySpread, "n1", 3, 2, false},
			},
			wantZ: 1,
		},
		{
			name:  "N=8 (3 ∤ N) relaxed: still at most 2 (8/3 = 2) → same violations",
			nodes: oneZone(8),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a"}, relaxed: true,
				place: [][]string{{"n1", "n2"}, {"n1", "n3"}, {"n1", "n4"}, {"n5", "n6"}}},
			opts: policies.Options{RelaxedLimits: true},
			want: []hit{
				{policies.MaxPodsPerNode, "n1", 3, 2, false},
				{policies.TopologySpread, "n1", 3, 2, false},
			},
			wantZ: 1,
		},
		{
			name:  "N=9 (3 | N) strict: at most 2 per node; n1 holds 3 → MaxPodsPerNode n1 3/2, TopologySpread n1 3/2",
			nodes: oneZone(9),
			cluster: redisCluster{shards: 3, perShard: 3, zones: []string{"a"},
				place: [][]string{{"n1", "n2", "n3"}, {"n1", "n4", "n5"}, {"n1", "n6", "n7"}}},
			want: []hit{
				{policies.MaxPodsPerNode, "n1", 3, 2, false},
				{policies.TopologySpread, "n1", 3, 2, false},
			},
			wantZ: 1,
		},
		{
			name:  "N=9 relaxed: at most 3 per node, maxSkew 3 → n1 with 3 complies",
			nodes: oneZone(9),
			cluster: redisCluster{shards: 3, perShard: 3, zones: []string{"a"}, relaxed: true,
				place: [][]string{{"n1", "n2", "n3"}, {"n1", "n4", "n5"}, {"n1", "n6", "n7"}}},
			opts:  policies.Options{RelaxedLimits: true},
			wantZ: 1,
		},
		{
			name:  "N=3 strict: fewer than 1 pod per node, so every occupied node breaks MaxPodsPerNode (the strict form; relaxed holds)",
			nodes: oneZone(3),
			cluster: redisCluster{shards: 1, perShard: 3, zones: []string{"a"},
				place: [][]string{{"n1", "n2", "n3"}}},
			want: []hit{
				{policies.MaxPodsPerNode, "n1", 1, 0, false},
				{policies.MaxPodsPerNode, "n2", 1, 0, false},
				{policies.MaxPodsPerNode, "n3", 1, 0, false},
			},
			wantZ: 1,
		},
		{
			name:  "N=3 relaxed: at most 1 per node → compliant",
			nodes: oneZone(3),
			cluster: redisCluster{shards: 1, perShard: 3, zones: []string{"a"}, relaxed: true,
				place: [][]string{{"n1", "n2", "n3"}}},
			opts:  policies.Options{RelaxedLimits: true},
			wantZ: 1,
		},
		{
			name:  "Z=2, N=8 (2 | N), zones 4/4 → compliant",
			nodes: fixture.ZonedNodes(4, "a", "b"),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a", "b"},
				place: [][]string{{"n1", "n5"}, {"n2", "n6"}, {"n3", "n7"}, {"n4", "n8"}}},
			wantZ: 2,
		},
		{
			name:  "Z=2, N=8, zones 5/3 → ZoneEvenSplit zone-a 2/0 (and shard 0 twice in zone-a)",
			nodes: fixture.ZonedNodes(4, "a", "b"),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a", "b"},
				place: [][]string{{"n1", "n2"}, {"n3", "n5"}, {"n4", "n6"}, {"n1", "n7"}}},
			hardOnly: true,
			want: []hit{
				{policies.ShardSeparation, "zone-a", 2, 1, false},
				{policies.ZoneEvenSplit, "zone-a", 2, 0, false},
			},
			wantZ: 2,
		},
		{
			name:  "Z=2, N=7 (2 ∤ N), zones 4/3 → compliant (they may differ by N mod 2 = 1)",
			nodes: fixture.ZonedNodes(4, "a", "b"),
			cluster: redisCluster{shards: 7, perShard: 1, zones: []string{"a", "b"},
				place: [][]string{{"n1"}, {"n2"}, {"n3"}, {"n4"}, {"n5"}, {"n6"}, {"n7"}}},
			wantZ: 2,
		},
		{
			name:  "Z=2, N=7, zones 5/2 → ZoneEvenSplit zone-a 3/1, soft ZoneBalance zone-a 3/1",
			nodes: fixture.ZonedNodes(4, "a", "b"),
			cluster: redisCluster{shards: 7, perShard: 1, zones: []string{"a", "b"},
				place: [][]string{{"n1"}, {"n2"}, {"n3"}, {"n4"}, {"n1"}, {"n5"}, {"n6"}}},
			want: []hit{
				{policies.ZoneEvenSplit, "zone-a", 3, 1, false},
				{policies.ZoneBalance, "zone-a", 3, 1, true},
			},
			wantZ: 2,
		},
		{
			name:  "Z=2, N from StatefulSet replicas (8) though one pod is not created: zones 4/3 → ZoneEvenSplit zone-a 1/0",
			nodes: fixture.ZonedNodes(4, "a", "b"),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a", "b"},
				place: [][]string{{"n1", "n5"}, {"n2", "n6"}, {"n3", "n7"}, {"n4", "-"}}},
			hardOnly: true,
			want:     []hit{{policies.ZoneEvenSplit, "zone-a", 1, 0, false}},
			wantZ:    2,
		},
		{
			name:  "Z=2, no StatefulSet: N is the pod count (7), zones 4/3 → compliant",
			nodes: fixture.ZonedNodes(4, "a", "b"),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a", "b"}, bare: true,
				place: [][]string{{"n1", "n5"}, {"n2", "n6"}, {"n3", "n7"}, {"n4", "-"}}},
			hardOnly: true,
			wantZ:    2,
		},
		{
			// 3 nodes per zone so that zone-a can hold 3 pods on distinct nodes.
			name:  "Z=3, N=6 (2 | N) strict: zone-a holds 3 (not fewer than 6/2) → MaxPodsPerZone zone-a 3/2, soft ZoneBalance zone-a 2/1",
			nodes: fixture.ZonedNodes(3, "a", "b", "c"),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"},
				place: [][]string{{"n1", "n4"}, {"n2", "n7"}, {"n3", "n8"}}},
			want: []hit{
				{policies.MaxPodsPerZone, "zone-a", 3, 2, false},
				{policies.ZoneBalance, "zone-a", 2, 1, true},
			},
			wantZ: 3,
		},
		{
			name:  "Z=3, N=6 relaxed: zone-a may hold 3 (at most N/2) → no hard violation",
			nodes: fixture.ZonedNodes(3, "a", "b", "c"),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"}, relaxed: true,
				place: [][]string{{"n1", "n4"}, {"n2", "n7"}, {"n3", "n8"}}},
			opts:     policies.Options{RelaxedLimits: true},
			hardOnly: true,
			wantZ:    3,
		},
		{
			name:  "Z=3, N=7 (2 ∤ N): zone-a holds 4 (fewer than 3.5 allows 3) → MaxPodsPerZone zone-a 4/3",
			nodes: fixture.ZonedNodes(3, "a", "b", "c"),
			cluster: redisCluster{shards: 7, perShard: 1, zones: []string{"a", "b", "c"},
				place: [][]string{{"n1"}, {"n2"}, {"n3"}, {"n1"}, {"n4"}, {"n7"}, {"n8"}}},
			hardOnly: true,
			want:     []hit{{policies.MaxPodsPerZone, "zone-a", 4, 3, false}},
			wantZ:    3,
		},
		{
			name:  "Z=4, N=8: zone-a holds 4 of 8 → MaxPodsPerZone zone-a 4/3",
			nodes: fixture.ZonedNodes(2, "a", "b", "c", "d"),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a", "b", "c", "d"},
				place: [][]string{{"n1", "n3"}, {"n1", "n5"}, {"n2", "n7"}, {"n2", "n4"}}},
			hardOnly: true,
			want:     []hit{{policies.MaxPodsPerZone, "zone-a", 4, 3, false}},
			wantZ:    4,
		},
		{
			// zone-d is outside the node affinity: with nodeAffinityPolicy Honor its node is no
			// domain of either constraint, so only AllowedZones sees the pod there.
			name:  "zone list [a b c], a pod on n7 in zone-d → AllowedZones zone-d 1/0",
			nodes: fixture.ZonedNodes(2, "a", "b", "c", "d"),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"},
				place: [][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", "n7"}}},
			hardOnly: true,
			want:     []hit{{policies.AllowedZones, "zone-d", 1, 0, false}},
			wantZ:    3,
		},
		{
			name:  "no zone list (no node affinity) on 4 zones: pods anywhere → no AllowedZones rule; Z=4 from the nodes",
			nodes: fixture.ZonedNodes(2, "a", "b", "c", "d"),
			cluster: redisCluster{shards: 3, perShard: 2,
				place: [][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", "n7"}}},
			wantZ: 4,
		},
		{
			name:  "nodeSelector zone-b (a zone list of one) and a pod in zone-a → AllowedZones zone-a",
			nodes: threeZones(),
			cluster: redisCluster{shards: 3, perShard: 2,
				podOpts:      []fixture.PodOption{fixture.NodeSelector(corev1.LabelTopologyZone, "zone-b")},
				templateOpts: []fixture.PodOption{fixture.NodeSelector(corev1.LabelTopologyZone, "zone-b")},
				place:        [][]string{{"n3", "n1"}, {"n4", "-"}, {"-", "-"}}},
			rules: []policies.Rule{policies.AllowedZones},
			want:  []hit{{policies.AllowedZones, "zone-a", 1, 0, false}},
			wantZ: 1,
		},
		{
			name:  "legacy zone label only (failure-domain.beta.kubernetes.io/zone), Z=3, zone-a holds 3 of 6 → MaxPodsPerZone zone-a 3/2",
			nodes: legacyZoned(3, "a", "b", "c"),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"}, legacyZoneKey: true,
				place: [][]string{{"n1", "n4"}, {"n2", "n7"}, {"n3", "n8"}}},
			hardOnly: true,
			want:     []hit{{policies.MaxPodsPerZone, "zone-a", 3, 2, false}},
			wantZ:    3,
			wantKey:  corev1.LabelFailureDomainBetaZone,
		},
		{
			name:  "legacy zone label only, Z=3, shard 0 twice in zone-b → ShardSeparation zone-b on the legacy key",
			nodes: legacyZoned(2, "a", "b", "c"),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"}, legacyZoneKey: true,
				place: [][]string{{"n3", "n4"}, {"n1", "n5"}, {"n2", "n6"}}},
			hardOnly: true,
			want:     []hit{{policies.ShardSeparation, "zone-b", 2, 1, false}},
			wantZ:    3,
			wantKey:  corev1.LabelFailureDomainBetaZone,
		},
		{
			name:  "nodes without a zone label: shard 0 on unzoned n7 and n8 shares no zone → no ShardSeparation",
			nodes: append(threeZones(), fixture.Node("n7"), fixture.Node("n8")),
			cluster: redisCluster{shards: 3, perShard: 2,
				place: [][]string{{"n7", "n8"}, {"n1", "n3"}, {"n5", "n2"}}},
			hardOnly: true,
			wantZ:    3,
			wantKey:  corev1.LabelTopologyZone,
		},
		{
			name:  "nodes without a zone label: shard 0 twice on unzoned n7 → ShardSeparation n7 (the node), MaxPodsPerNode n7, TopologySpread n7",
			nodes: append(threeZones(), fixture.Node("n7"), fixture.Node("n8")),
			cluster: redisCluster{shards: 3, perShard: 2,
				place: [][]string{{"n7", "n7"}, {"n1", "n3"}, {"n5", "n2"}}},
			hardOnly: true,
			want: []hit{
				{policies.MaxPodsPerNode, "n7", 2, 1, false},
				{policies.ShardSeparation, "n7", 2, 1, false},
				{policies.TopologySpread, "n7", 2, 1, false},
			},
			wantZ: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(snapshotOf(tc.nodes, []redisCluster{tc.cluster}), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Clusters) != 1 {
				t.Fatalf("clusters = %d, want 1", len(m.Clusters))
			}
			c := m.Clusters[0]
			vs := c.Evaluate(c.Current())
			got := hits(vs)
			if tc.hardOnly {
				got = hardHitsOf(vs)
			}
			if tc.rules != nil {
				got = only(got, tc.rules...)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
				for _, v := range vs {
					t.Logf("%s", v.Message)
				}
			}
			if c.Z() != tc.wantZ {
				t.Errorf("Z = %d (%v), want %d", c.Z(), c.AllowedZones, tc.wantZ)
			}
			if tc.wantKey != "" && c.ZoneKey != tc.wantKey {
				t.Errorf("ZoneKey = %q, want %q", c.ZoneKey, tc.wantKey)
			}
			if c.Compliant(c.Current()) != (len(hardHitsOf(vs)) == 0) {
				t.Errorf("Compliant disagrees with Evaluate")
			}
		})
	}
}

// legacyZoned is zonedNodes with only the legacy zone label.
func legacyZoned(perZone int, zones ...string) []*corev1.Node {
	nodes := fixture.ZonedNodes(perZone, zones...)
	for _, n := range nodes {
		z := n.Labels[corev1.LabelTopologyZone]
		delete(n.Labels, corev1.LabelTopologyZone)
		n.Labels[corev1.LabelFailureDomainBetaZone] = z
	}
	return nodes
}

// TestLimits pins NodeLimit and ZoneLimit, and the generator's maxSkew, at the divisibility
// boundaries: "fewer than N/3" and "fewer than N/2" pods; maxSkew N/3 (N/2) minus 1 when 3 (2)
// divides N; the relaxed "at most" forms.
func TestLimits(t *testing.T) {
	type row struct{ n, node, nodeRelaxed, zone, zoneRelaxed, nodeSkew, nodeSkewRelaxed, zoneSkew, zoneSkewRelaxed int }
	var got []row
	for _, n := range []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 12} {
		got = append(got, row{n,
			policies.NodeLimit(n, false), policies.NodeLimit(n, true),
			policies.ZoneLimit(n, false), policies.ZoneLimit(n, true),
			constraints.NodeMaxSkew(n, false), constraints.NodeMaxSkew(n, true),
			constraints.ZoneMaxSkew(n, false), constraints.ZoneMaxSkew(n, true)})
	}
	want := []row{
		{2, 0, 0, 0, 1, 1, 1, 1, 1},
		{3, 0, 1, 1, 1, 1, 1, 1, 1},
		{4, 1, 1, 1, 2, 1, 1, 1, 2},
		{5, 1, 1, 2, 2, 1, 1, 2, 2},
		{6, 1, 2, 2, 3, 1, 2, 2, 3}, // N=6, Z=3: node maxSkew 1, zone maxSkew 2
		{7, 2, 2, 3, 3, 2, 2, 3, 3},
		{8, 2, 2, 3, 4, 2, 2, 3, 4},
		{9, 2, 3, 4, 4, 2, 3, 4, 4},
		{10, 3, 3, 4, 5, 3, 3, 4, 5},
		{12, 3, 4, 5, 6, 3, 4, 5, 6},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}
