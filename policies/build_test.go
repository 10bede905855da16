package policies_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

func pdb(name string, sel *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixture.Namespace}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
}

// TestClusterShape pins how Build reads a cluster: N, shards, ordinals, roles, StatefulSets and
// PodDisruptionBudgets.
func TestClusterShape(t *testing.T) {
	type shape struct {
		N       int
		STS     int
		Members []string // name/shard/ordinal/role/node
		Shards  []string // name:StatefulSet
		PDBs    []string
	}
	describe := func(c *policies.Cluster) shape {
		s := shape{N: c.N, STS: len(c.StatefulSets)}
		for _, m := range c.Members {
			node := "-"
			if m.Node >= 0 {
				node = c.Model().Nodes[m.Node].Name
			}
			s.Members = append(s.Members, fmt.Sprintf("%s/%s/%d/%s/%s", m.Name(), m.Shard, m.Ordinal, m.Role, node))
		}
		for _, sh := range c.Shards {
			sts := "-"
			if sh.StatefulSet != nil {
				sts = sh.StatefulSet.Name
			}
			s.Shards = append(s.Shards, sh.Name+":"+sts)
		}
		for _, p := range c.PodDisruptionBudgets {
			s.PDBs = append(s.PDBs, p.Name)
		}
		return s
	}
	nodes := fixture.ZonedNodes(2, "a", "b")
	for _, tc := range []struct {
		name    string
		cluster redisCluster
		objs    []any
		opts    policies.Options
		want    shape
	}{
		{
			name:    "N is the StatefulSets' replicas (2×2) although s1-1 is not created; roles from the role label",
			cluster: redisCluster{shards: 2, perShard: 2, roles: true, place: [][]string{{"n1", "n3"}, {"n2", "-"}}},
			opts:    policies.Options{RoleLabel: scenario.RoleLabel},
			want: shape{N: 4, STS: 2,
				Members: []string{"redis-s0-0/redis-s0/0/master/n1", "redis-s0-1/redis-s0/1/replica/n3", "redis-s1-0/redis-s1/0/master/n2"},
				Shards:  []string{"redis-s0:redis-s0", "redis-s1:redis-s1"}},
		},
		{
			name:    "replicas 3 in each StatefulSet while 2 pods run per shard → N=6, a Pending pod is a member",
			cluster: redisCluster{shards: 2, perShard: 2, replicas: ptr.To(int32(3)), place: [][]string{{"n1", ""}, {"n2", "n4"}}},
			want: shape{N: 6, STS: 2,
				Members: []string{"redis-s0-0/redis-s0/0//n1", "redis-s0-1/redis-s0/1//-", "redis-s1-0/redis-s1/0//n2", "redis-s1-1/redis-s1/1//n4"},
				Shards:  []string{"redis-s0:redis-s0", "redis-s1:redis-s1"}},
		},
		{
			name:    "no StatefulSet: N is the pod count, each pod its own shard, no ordinal",
			cluster: redisCluster{shards: 2, perShard: 2, bare: true, place: [][]string{{"n1", "n3"}, {"n2", "-"}}},
			want: shape{N: 3,
				Members: []string{"redis-s0-0/redis-s0-0/-1//n1", "redis-s0-1/redis-s0-1/-1//n3", "redis-s1-0/redis-s1-0/-1//n2"},
				Shards:  []string{"redis-s0-0:-", "redis-s0-1:-", "redis-s1-0:-"}},
		},
		{
			name:    "shard source label:KEY groups shards by label and each shard still knows its StatefulSet",
			cluster: redisCluster{shards: 2, perShard: 1, place: [][]string{{"n1"}, {"n2"}}},
			opts:    policies.Options{ShardSource: policies.ShardSource{Kind: policies.ShardLabel, Key: scenario.ShardLabel}},
			want: shape{N: 2, STS: 2,
				Members: []string{"redis-s0-0/redis-s0/0//n1", "redis-s1-0/redis-s1/0//n2"},
				Shards:  []string{"redis-s0:redis-s0", "redis-s1:redis-s1"}},
		},
		{
			name:    "finished pods are not members; a terminating one is",
			cluster: redisCluster{shards: 1, perShard: 3, place: [][]string{{"n1", "n2", "n3"}}},
			objs:    []any{},
			want: shape{N: 3, STS: 1,
				Members: []string{"redis-s0-0/redis-s0/0//n1", "redis-s0-1/redis-s0/1//n2", "redis-s0-2/redis-s0/2//n3"},
				Shards:  []string{"redis-s0:redis-s0"}},
		},
		{
			name:    "PDBs: the shard's, an empty selector's (selects every pod in policy/v1), by labels or expressions; not a nil selector's, another cluster's or shard's, nor an expression's that excludes them",
			cluster: redisCluster{shards: 1, perShard: 2, place: [][]string{{"n1", "n3"}}},
			objs: []any{
				pdb("shard", &metav1.LabelSelector{MatchLabels: map[string]string{policies.DefaultClusterLabel: "redis", scenario.ShardLabel: "redis-s0"}}),
				pdb("all", &metav1.LabelSelector{}),
				pdb("none", nil),
				pdb("other", &metav1.LabelSelector{MatchLabels: map[string]string{policies.DefaultClusterLabel: "other"}}),
				pdb("by-app", &metav1.LabelSelector{MatchLabels: map[string]string{scenario.AppLabel: "redis"}}),
				pdb("other-shard", &metav1.LabelSelector{MatchLabels: map[string]string{policies.DefaultClusterLabel: "redis", scenario.ShardLabel: "redis-s1"}}),
				pdb("by-expression", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: scenario.ShardLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"redis-s0"}}}}),
				pdb("excluding", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: scenario.AppLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"redis"}}}}),
			},
			want: shape{N: 2, STS: 1,
				Members: []string{"redis-s0-0/redis-s0/0//n1", "redis-s0-1/redis-s0/1//n3"},
				Shards:  []string{"redis-s0:redis-s0"},
				PDBs:    []string{"shard", "all", "by-app", "by-expression"}},
		},
		{
			name:    "ClusterLabel option: the cluster is named by another label its templates lack; the controlling StatefulSets still count",
			cluster: redisCluster{shards: 1, perShard: 2, place: [][]string{{"n1", "n3"}}, podOpts: []fixture.PodOption{fixture.WithLabels("cloud.netease.com/cluster-name", "rc-3az")}},
			opts:    policies.Options{ClusterLabel: "cloud.netease.com/cluster-name"},
			want: shape{N: 2, STS: 1,
				Members: []string{"redis-s0-0/redis-s0/0//n1", "redis-s0-1/redis-s0/1//n3"},
				Shards:  []string{"redis-s0:redis-s0"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotOf(nodes, []redisCluster{tc.cluster}, tc.objs...)
			if strings.HasPrefix(tc.name, "finished") {
				snap.Pods = append(snap.Pods, fixture.Pod("redis-s0-9", fixture.WithLabels(policies.DefaultClusterLabel, "redis"), fixture.On("n4"), fixture.Succeeded()))
				fixture.Terminating()(snap.Pods[2])
			}
			m, err := policies.Build(snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Clusters) != 1 {
				t.Fatalf("clusters = %d", len(m.Clusters))
			}
			if diff := cmp.Diff(tc.want, describe(m.Clusters[0])); diff != "" {
				t.Errorf("cluster (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnschedulableRule pins when a cluster's pod counts as Unschedulable, in the snapshot and in
// simulated placements.
func TestUnschedulableRule(t *testing.T) {
	nodes := fixture.ZonedNodes(2, "a", "b", "c")
	rc := func(place [][]string, opts ...fixture.PodOption) redisCluster {
		return redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"}, place: place, podOpts: opts}
	}
	compliant := [][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"}}
	for _, tc := range []struct {
		name    string
		cluster redisCluster
		mutate  func(snap *policies.Snapshot)
		sim     func(c *policies.Cluster, p policies.Placement) // changes the placement
		want    []hit
	}{
		{
			name:    "a Pending pod marked PodScheduled=False/Unschedulable → Unschedulable 1",
			cluster: rc([][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", ""}}),
			want:    []hit{{policies.Unschedulable, "", 1, 0, false}},
		},
		{
			name:    "a Pending pod the scheduler has not judged yet (no PodScheduled condition) → no violation",
			cluster: rc([][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", ""}}),
			mutate:  func(snap *policies.Snapshot) { fixture.JustCreated()(snap.Pods[5]) },
		},
		{
			name:    "a terminating member is unplaced and not counted → no violation",
			cluster: rc(compliant),
			mutate:  func(snap *policies.Snapshot) { fixture.Terminating()(snap.Pods[5]) },
		},
		{
			name:    "a member bound to a node the snapshot lacks is unplaced → no violation",
			cluster: rc(compliant),
			mutate:  func(snap *policies.Snapshot) { snap.Pods[5].Spec.NodeName = "gone" },
		},
		{
			name:    "simulated: a member evicted and not re-placed → Unschedulable 1",
			cluster: rc(compliant),
			sim:     func(c *policies.Cluster, p policies.Placement) { p[memberIndex(c, "redis-s2-1")] = -1 },
			want:    []hit{{policies.Unschedulable, "", 1, 0, false}},
		},
		{
			name:    "simulated: the Unschedulable pod placed → no violation",
			cluster: rc([][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", ""}}),
			sim: func(c *policies.Cluster, p policies.Placement) {
				p[memberIndex(c, "redis-s2-1")] = c.Model().NodeIndex("n6")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotOf(nodes, []redisCluster{tc.cluster})
			if tc.mutate != nil {
				tc.mutate(snap)
			}
			m, err := policies.Build(snap, policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			p := c.Current()
			if tc.sim != nil {
				tc.sim(c, p)
			}
			got := only(hits(c.Evaluate(p)), policies.Unschedulable)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Unschedulable (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSoftRules pins NodeSpread (inside a zone, over its usable nodes) and ZoneBalance (over the
// allowed zones). Clusters are bare (no constraints) so that only these rules speak.
func TestSoftRules(t *testing.T) {
	bare := func(places ...string) []any {
		var out []any
		for _, p := range members(places) {
			out = append(out, p)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		pods  []any
		want  []hit
	}{
		{
			name:  "zone-a [n1 2, n2 0, n3 1], b and c 1 each → NodeSpread n1 2/1 and ZoneBalance zone-a 2/1",
			nodes: fixture.ZonedNodes(3, "a", "b", "c"),
			pods:  bare("n1", "n1", "n3", "n4", "n7"),
			want: []hit{
				{policies.NodeSpread, "n1", 2, 1, true},
				{policies.ZoneBalance, "zone-a", 2, 1, true},
			},
		},
		{
			name:  "a cordoned empty node is not usable: zone-a [n1 2, n3 1] spreads within 1",
			nodes: append(fixture.ZonedNodes(3, "a")[:1], fixture.Node("n2", fixture.InZone("zone-a"), fixture.Cordoned()), fixture.Node("n3", fixture.InZone("zone-a")), fixture.Node("n4", fixture.InZone("zone-b")), fixture.Node("n5", fixture.InZone("zone-b"))),
			pods:  bare("n1", "n1", "n3", "n4", "n5"),
		},
		{
			name:  "a cordoned node holding pods still counts: n2 (cordoned) 3, n1 1 → NodeSpread n2 2/1",
			nodes: append(fixture.ZonedNodes(1, "a"), fixture.Node("n2", fixture.InZone("zone-a"), fixture.Cordoned()), fixture.Node("n3", fixture.InZone("zone-b")), fixture.Node("n4", fixture.InZone("zone-b"))),
			pods:  bare("n1", "n2", "n2", "n2", "n3", "n3", "n4", "n4"),
			want:  []hit{{policies.NodeSpread, "n2", 2, 1, true}},
		},
		{
			name:  "an allowed zone with no pod counts 0: [2,2,0] → ZoneBalance zone-a 2/1",
			nodes: fixture.ZonedNodes(2, "a", "b", "c"),
			pods:  bare("n1", "n2", "n3", "n4"),
			want:  []hit{{policies.ZoneBalance, "zone-a", 2, 1, true}},
		},
		{
			name:  "one zone (Z=1): no soft rule",
			nodes: fixture.ZonedNodes(3, "a"),
			pods:  bare("n1", "n1", "n1"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(snapshotOf(tc.nodes, nil, tc.pods...), policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := clusterNamed(m, "c1")
			var got []hit
			for _, h := range hits(c.Evaluate(c.Current())) {
				if h.Soft {
					got = append(got, h)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("soft violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStaticInfeasibility pins the quick count of why no placement can comply.
func TestStaticInfeasibility(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   []*corev1.Node
		cluster redisCluster
		opts    policies.Options
		want    string // a substring of the reason; "" for none
	}{
		{
			name:    "N=6 at most 1 per node on 5 nodes (fewer than 6 nodes: the relaxed limit cannot hold) → needs 6 usable nodes",
			nodes:   fixture.ZonedNodes(5, "a"),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"}, place: [][]string{{"n1", "n2"}, {"n3", "n4"}, {"n5", "n1"}}},
			want:    "need 6 usable nodes, found 5",
		},
		{
			name:    "N=6 on 6 nodes, one cordoned → 5 usable",
			nodes:   append(fixture.ZonedNodes(5, "a"), fixture.Node("n6", fixture.InZone("zone-a"), fixture.Cordoned())),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"}, place: [][]string{{"n1", "n2"}, {"n3", "n4"}, {"n5", "n1"}}},
			want:    "need 6 usable nodes, found 5",
		},
		{
			// n6 is tainted and only shard 2's template tolerates it: it is usable for the cluster.
			name:  "N=6 on 6 nodes, n6 tainted, tolerated by shard 2 only → usable (some member may use it): feasible",
			nodes: append(fixture.ZonedNodes(5, "a"), fixture.Node("n6", fixture.InZone("zone-a"), fixture.Tainted("t", "x", corev1.TaintEffectNoSchedule))),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"}, place: [][]string{{"n1", "n2"}, {"n3", "n4"}, {"n5", "n1"}},
				templateOpts: []fixture.PodOption{func(p *corev1.Pod) {
					if p.Labels[scenario.ShardLabel] == "redis-s2" {
						fixture.Tolerates("t", corev1.TaintEffectNoSchedule)(p)
					}
				}}},
			want: "",
		},
		{
			name:    "N=3 strict: a node may hold none",
			nodes:   fixture.ZonedNodes(3, "a"),
			cluster: redisCluster{shards: 1, perShard: 3, zones: []string{"a"}, place: [][]string{{"n1", "n2", "n3"}}},
			want:    "i.e. none",
		},
		{
			name:    "N=6 on 6 nodes, n6 cordoned but running a pod that may stay → feasible",
			nodes:   append(fixture.ZonedNodes(5, "a"), fixture.Node("n6", fixture.InZone("zone-a"), fixture.Cordoned())),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"}, place: [][]string{{"n1", "n2"}, {"n3", "n4"}, {"n6", "n1"}}},
			want:    "",
		},
		{
			name:    "N=6 on 6 nodes, n6 tainted NoSchedule (the templates do not tolerate it) running a pod → feasible",
			nodes:   append(fixture.ZonedNodes(5, "a"), fixture.Node("n6", fixture.InZone("zone-a"), fixture.Tainted("t", "x", corev1.TaintEffectNoSchedule))),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"}, place: [][]string{{"n1", "n2"}, {"n3", "n4"}, {"n6", "n1"}}},
			want:    "",
		},
		{
			name:    "N=6, 4 usable nodes and n6 cordoned running 2 pods: only 1 may stay (limit 1) → room for 5",
			nodes:   append(fixture.ZonedNodes(4, "a"), fixture.Node("n6", fixture.InZone("zone-a"), fixture.Cordoned())),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a"}, place: [][]string{{"n6", "n2"}, {"n3", "n6"}, {"n1", "n4"}}},
			want:    "need room for 6, found 5: 4 on 4 usable nodes and 1 staying where they run",
		},
		{
			name:    "Z=3, 3 pods per shard, zone-c's only node cordoned running a pod of each shard → only one may stay: zones hold 5",
			nodes:   append(fixture.ZonedNodes(3, "a", "b"), fixture.Node("n7", fixture.InZone("zone-c"), fixture.Cordoned())),
			cluster: redisCluster{shards: 2, perShard: 3, zones: []string{"a", "b", "c"}, place: [][]string{{"n1", "n4", "n7"}, {"n2", "n5", "n7"}}},
			want:    "the allowed zones can hold 5 of N=6 pods",
		},
		{
			name:    "Z=3, 3 pods per shard, zone-c's only node cordoned, shard 1 has no pod there → it needs 3 zones, finds 2",
			nodes:   append(fixture.ZonedNodes(3, "a", "b"), fixture.Node("n7", fixture.InZone("zone-c"), fixture.Cordoned())),
			cluster: redisCluster{shards: 2, perShard: 3, zones: []string{"a", "b", "c"}, place: [][]string{{"n1", "n4", "n7"}, {"n2", "n5", "n3"}}},
			want:    "a shard of 3 pods needs 3 zones with usable nodes (ShardSeparation), found 2 (shard redis-s1)",
		},
		{
			name:    "Z=2, N=8, zone-b has 1 node (at most 2 pods) but must hold 4 → ZoneEvenSplit",
			nodes:   append(fixture.ZonedNodes(4, "a"), fixture.Node("n5", fixture.InZone("zone-b"))),
			cluster: redisCluster{shards: 4, perShard: 2, zones: []string{"a", "b"}, place: [][]string{{"n1", "n5"}, {"n2", "n5"}, {"n3", ""}, {"n4", ""}}},
			want:    "zone zone-b must hold 4 pods (ZoneEvenSplit) but its nodes hold at most 2",
		},
		{
			name:    "Z=3, N=6 on 3 zones × 2 nodes → feasible",
			nodes:   fixture.ZonedNodes(2, "a", "b", "c"),
			cluster: redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"}, place: [][]string{{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"}}},
			want:    "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(snapshotOf(tc.nodes, []redisCluster{tc.cluster}), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := m.Clusters[0].StaticInfeasibility(nil)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("StaticInfeasibility(nil) = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNodeClass: nodes the rules and the filter cannot tell apart share a class; any difference
// that matters (zone, taints, matching non-member pods, free capacity) separates them.
func TestNodeClass(t *testing.T) {
	nodes := []*corev1.Node{
		fixture.Node("n1", fixture.InZone("zone-a")), fixture.Node("n2", fixture.InZone("zone-a")), // interchangeable
		fixture.Node("n3", fixture.InZone("zone-b")),                                                                                             // another zone
		fixture.Node("n4", fixture.InZone("zone-a"), fixture.Tainted("t", "x", corev1.TaintEffectNoSchedule)),                                    // tainted
		fixture.Node("n5", fixture.InZone("zone-a")),                                                                                             // holds a matching non-member pod
		fixture.Node("n6", fixture.InZone("zone-a"), fixture.Allocatable("150m", "1Gi", 110)),                                                    // room for one member only
		fixture.Node("n7", fixture.InZone("zone-a")), fixture.Node("n8", fixture.InZone("zone-a")), fixture.Node("n9", fixture.InZone("zone-a")), // fillers
	}
	spec := []fixture.PodOption{fixture.SpreadOn(corev1.LabelHostname, 1, redisPods)}
	objs := []any{incoming("x", spec...), fixture.Pod("cache", fixture.WithLabels(scenario.AppLabel, "redis"), fixture.On("n5"))}
	for _, p := range members([]string{"n7", "n8", "n9"}, spec...) {
		objs = append(objs, p)
	}
	m, err := policies.Build(snapshotOf(nodes, nil, objs...), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := clusterNamed(m, "c1")
	class := func(name string) uint64 { return c.NodeClass(m.NodeIndex(name)) }
	if class("n1") != class("n2") {
		t.Errorf("n1 and n2 differ")
	}
	for _, other := range []string{"n3", "n4", "n5", "n6"} {
		if class("n1") == class(other) {
			t.Errorf("n1 and %s share a class", other)
		}
	}
}

// TestBuildParallel: a model built with parallel workers (many clusters) judges every cluster as
// a model of that cluster alone does.
func TestBuildParallel(t *testing.T) {
	nodes := fixture.ZonedNodes(3, "a", "b", "c")
	var clusters []redisCluster
	for k := 0; k < 80; k++ {
		rc := redisCluster{name: fmt.Sprintf("rc%02d", k), shards: 3, perShard: 2, zones: []string{"a", "b", "c"}, roles: true,
			place: [][]string{{"n1", "n4"}, {"n2", "n7"}, {"n3", "n8"}}}
		switch k % 4 {
		case 1:
			rc.place[0][1] = "n1" // shard 0 twice on n1
		case 2:
			rc.place[2][1] = "" // Pending
		case 3:
			rc.relaxed = true
		}
		clusters = append(clusters, rc)
	}
	opts := policies.Options{RoleLabel: scenario.RoleLabel}
	all, err := policies.Build(snapshotOf(nodes, clusters), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Clusters) != len(clusters) {
		t.Fatalf("clusters = %d", len(all.Clusters))
	}
	for k, rc := range clusters {
		alone, err := policies.Build(snapshotOf(fixture.ZonedNodes(3, "a", "b", "c"), []redisCluster{rc}), opts)
		if err != nil {
			t.Fatal(err)
		}
		a, b := all.Clusters[k], alone.Clusters[0]
		if diff := cmp.Diff(b.Evaluate(b.Current()), a.Evaluate(a.Current())); diff != "" {
			t.Errorf("%s: violations (-alone +together):\n%s", rc.name, diff)
		}
		for i := range a.Members {
			p := a.Current()
			p[i] = -1
			if diff := cmp.Diff(b.Candidates(p, i), a.Candidates(p, i)); diff != "" {
				t.Errorf("%s member %d: candidates (-alone +together):\n%s", rc.name, i, diff)
			}
		}
	}
}

// TestBuildErrors: a malformed selector in a cluster's pods is an error naming the cluster.
func TestBuildErrors(t *testing.T) {
	bad := fixture.SpreadOn(corev1.LabelHostname, 1, nil, func(c *corev1.TopologySpreadConstraint) {
		c.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
	})
	_, err := policies.Build(snapshotOf(fixture.ZonedNodes(1, "a"), nil, incoming("x", bad)), policies.Options{})
	if err == nil || !strings.Contains(err.Error(), "cluster redis/c1") {
		t.Fatalf("Build error = %v, want one naming cluster redis/c1", err)
	}
}

// TestAllowedZones pins how the allowed zones (the required node affinity's), ZoneList and ZoneKey
// are read from the members' required node affinity and nodeSelector.
func TestAllowedZones(t *testing.T) {
	ga, legacy := corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone
	nodes := append(fixture.ZonedNodes(1, "a", "b", "c"), fixture.Node("n4", fixture.InZone("zone-d"), fixture.NodeLabel("disk", "ssd")))
	type want struct {
		Zones []string
		List  bool
		Key   string
	}
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		spec  []fixture.PodOption
		want  want
	}{
		{name: "no affinity → the zones of every node, no list", spec: nil,
			want: want{[]string{"zone-a", "zone-b", "zone-c", "zone-d"}, false, ga}},
		{name: "zone In [a b c] → that list", spec: []fixture.PodOption{fixture.RequiredIn(ga, "zone-a", "zone-b", "zone-c")},
			want: want{[]string{"zone-a", "zone-b", "zone-c"}, true, ga}},
		{name: "two terms In [a] and In [c] (ORed) → [a c]", spec: []fixture.PodOption{fixture.RequiredIn(ga, "zone-a"), fixture.RequiredIn(ga, "zone-c")},
			want: want{[]string{"zone-a", "zone-c"}, true, ga}},
		{name: "one term requiring GA In [a b] and legacy In [b c] (ANDed) → [b]",
			spec: []fixture.PodOption{func(p *corev1.Pod) {
				fixture.RequiredIn(ga, "zone-a", "zone-b")(p)
				ns := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				ns.NodeSelectorTerms[0].MatchExpressions = append(ns.NodeSelectorTerms[0].MatchExpressions,
					corev1.NodeSelectorRequirement{Key: legacy, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b", "zone-c"}})
			}},
			want: want{[]string{"zone-b"}, true, ga}},
		{name: "a term without a zone requirement (disk In [ssd]) ORed with zone In [a] → no list; zones of the matching nodes",
			spec: []fixture.PodOption{fixture.RequiredIn(ga, "zone-a"), fixture.RequiredIn("disk", "ssd")},
			want: want{[]string{"zone-a", "zone-d"}, false, ga}},
		{name: "nodeSelector zone-b and affinity In [a b] → [b]",
			spec: []fixture.PodOption{fixture.NodeSelector(ga, "zone-b"), fixture.RequiredIn(ga, "zone-a", "zone-b")},
			want: want{[]string{"zone-b"}, true, ga}},
		{name: "nodeSelector zone-c alone → [c]", spec: []fixture.PodOption{fixture.NodeSelector(ga, "zone-c")},
			want: want{[]string{"zone-c"}, true, ga}},
		{name: "zone NotIn [a] is no list → the zones of the nodes it matches",
			spec: []fixture.PodOption{func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: ga, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"zone-a"}}}}}}}}
			}},
			want: want{[]string{"zone-b", "zone-c", "zone-d"}, false, ga}},
		{name: "the legacy zone key on legacy-labelled nodes → the list, ZoneKey legacy",
			nodes: legacyZoned(1, "a", "b", "c"), spec: []fixture.PodOption{fixture.RequiredIn(legacy, "zone-a", "zone-b", "zone-c")},
			want: want{[]string{"zone-a", "zone-b", "zone-c"}, true, legacy}},
		{name: "legacy-keyed anti-affinity on nodes carrying both labels → ZoneKey legacy (the pods' key)",
			nodes: func() []*corev1.Node {
				ns := fixture.ZonedNodes(1, "a", "b")
				for _, n := range ns {
					n.Labels[legacy] = n.Labels[ga]
				}
				return ns
			}(),
			spec: []fixture.PodOption{fixture.AntiAffinity(legacy, map[string]string{scenario.ShardLabel: "x"})},
			want: want{[]string{"zone-a", "zone-b"}, false, legacy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.nodes
			if ns == nil {
				ns = nodes
			}
			m, err := policies.Build(snapshotOf(ns, nil, incoming("x", tc.spec...)), policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := clusterNamed(m, "c1")
			if diff := cmp.Diff(tc.want, want{c.AllowedZones, c.ZoneList, c.ZoneKey}); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
		})
	}
}
