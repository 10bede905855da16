package scenario

import (
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// TestLayouts checks the objects of each layout: StatefulSets, PodDisruptionBudgets, pod names,
// the shards as Redis is formed with them, and that the rules see the same post-scale-down
// drift in every layout (shards and roles from RedisNodes in Bitnami's and OT's).
func TestLayouts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sc        Scenario
		sets      map[string]int32 // StatefulSet → replicas
		pdbs      []string
		shard0    []string // shard 0's pods, master first
		shard4    []string
		n1        []string // the pods bound to n1
		podLabels map[string]string
	}{
		{
			name:   "seed post-scale-down → a StatefulSet and a PDB per shard",
			sc:     PostScaleDown(),
			sets:   map[string]int32{"redis-s0": 2, "redis-s1": 2, "redis-s2": 2, "redis-s3": 2, "redis-s4": 2},
			pdbs:   []string{"redis-s0", "redis-s1", "redis-s2", "redis-s3", "redis-s4"},
			shard0: []string{"redis-s0-0", "redis-s0-1"}, shard4: []string{"redis-s4-0", "redis-s4-1"},
			n1:        []string{"redis-s0-0", "redis-s1-0", "redis-s2-0", "redis-s3-0"},
			podLabels: map[string]string{AppLabel: AppValue, policies.DefaultClusterLabel: "redis", ShardLabel: "redis-s0"},
		},
		{
			name:   "Bitnami post-scale-down → one StatefulSet of 10, one PDB, masters 0..4 paired as redis-cli pairs them",
			sc:     BitnamiPostScaleDown(),
			sets:   map[string]int32{"redis-cluster": 10},
			pdbs:   []string{"redis-cluster"},
			shard0: []string{"redis-cluster-0", "redis-cluster-6"}, shard4: []string{"redis-cluster-4", "redis-cluster-5"},
			n1: []string{"redis-cluster-0", "redis-cluster-1", "redis-cluster-2", "redis-cluster-3"},
			podLabels: map[string]string{
				AppLabel: "redis-cluster", BitnamiInstanceLabel: "redis-cluster", "app.kubernetes.io/managed-by": "Helm",
				"helm.sh/chart": BitnamiChart, "app.kubernetes.io/version": BitnamiAppVersion,
			},
		},
		{
			name:   "OT post-scale-down → leader and follower StatefulSets of 5, a PDB per role",
			sc:     OTPostScaleDown(),
			sets:   map[string]int32{"redis-cluster-leader": 5, "redis-cluster-follower": 5},
			pdbs:   []string{"redis-cluster-follower", "redis-cluster-leader"},
			shard0: []string{"redis-cluster-leader-0", "redis-cluster-follower-0"}, shard4: []string{"redis-cluster-leader-4", "redis-cluster-follower-4"},
			n1: []string{"redis-cluster-leader-0", "redis-cluster-leader-1", "redis-cluster-leader-2", "redis-cluster-leader-3"},
			podLabels: map[string]string{
				"app": "redis-cluster-leader", "redis_setup_type": "cluster", OTRoleLabel: "leader", OTClusterLabel: "redis-cluster", OTRedisRoleLabel: "master",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.sc.MustSnapshot()
			sets := map[string]int32{}
			for _, s := range snap.StatefulSets {
				sets[s.Name] = *s.Spec.Replicas
			}
			if diff := cmp.Diff(tc.sets, sets); diff != "" {
				t.Errorf("StatefulSets (-want +got):\n%s", diff)
			}
			var pdbs []string
			for _, b := range snap.PodDisruptionBudgets {
				pdbs = append(pdbs, b.Name)
				if b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() != 1 {
					t.Errorf("PDB %s: maxUnavailable %v, want 1", b.Name, b.Spec.MaxUnavailable)
				}
			}
			sort.Strings(pdbs)
			if diff := cmp.Diff(tc.pdbs, pdbs); diff != "" {
				t.Errorf("PDBs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.shard0, tc.sc.ShardPods(0)); diff != "" {
				t.Errorf("shard 0 (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.shard4, tc.sc.ShardPods(4)); diff != "" {
				t.Errorf("shard 4 (-want +got):\n%s", diff)
			}
			var n1 []string
			sel := labels.SelectorFromSet(tc.sc.ClusterLabels())
			for _, p := range snap.Pods {
				if p.Spec.NodeName == "n1" {
					n1 = append(n1, p.Name)
				}
				if !sel.Matches(labels.Set(p.Labels)) {
					t.Errorf("pod %s (%v) does not match the cluster's selector %s", p.Name, p.Labels, sel)
				}
				if got := p.Labels[tc.sc.ClusterLabel()]; got != "redis-cluster" && got != "redis" {
					t.Errorf("pod %s: cluster label %s=%q", p.Name, tc.sc.ClusterLabel(), got)
				}
			}
			sort.Strings(n1)
			if diff := cmp.Diff(tc.n1, n1); diff != "" {
				t.Errorf("pods on n1 (-want +got):\n%s", diff)
			}
			first := maps.Clone(podByName(snap.Pods, tc.shard0[0]).Labels)
			delete(first, appsv1.StatefulSetPodNameLabel)
			delete(first, appsv1.PodIndexLabel)
			if diff := cmp.Diff(tc.podLabels, first); diff != "" {
				t.Errorf("%s's labels (-want +got):\n%s", tc.shard0[0], diff)
			}

			// The rules see the post-scale-down drift in every layout.
			m, err := policies.Build(snap, policies.Options{ClusterLabel: tc.sc.ClusterLabel()})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Clusters) != 1 {
				t.Fatalf("clusters = %d, want 1", len(m.Clusters))
			}
			c := m.Clusters[0]
			if tc.sc.Layout != LayoutSeed {
				c.ApplyRedis(tc.sc.RedisNodes())
				if c.ShardSource.Kind != policies.ShardRedis || len(c.Warnings) > 0 {
					t.Errorf("shards from %s, warnings %q; want them from Redis, every pod matched", c.ShardSource, c.Warnings)
				}
			}
			if c.N != 10 || len(c.Shards) != 5 {
				t.Errorf("N = %d, shards = %d; want 10 and 5", c.N, len(c.Shards))
			}
			for _, sh := range c.Shards {
				if len(sh.Members) != 2 {
					t.Errorf("shard %s has %d members, want 2", sh.Name, len(sh.Members))
				}
			}
			var got []string
			for _, v := range policies.Hard(c.Evaluate(c.Current())) {
				got = append(got, string(v.Rule)+" "+v.Domain)
			}
			sort.Strings(got)
			want := []string{"MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}
			if tc.sc.Layout != LayoutSeed { // roles from Redis: n1 and zone-a hold 4 and 5 masters
				want = []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("hard violations (-want +got):\n%s", diff)
			}
		})
	}
}

func podByName(pods []*corev1.Pod, name string) *corev1.Pod {
	for _, p := range pods {
		if p.Name == name {
			return p
		}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// TestBitnamiOrdinal checks the pairing of `redis-cli --cluster create --cluster-replicas R`
// over the chart's pods in ordinal order.
func TestBitnamiOrdinal(t *testing.T) {
	for _, tc := range []struct {
		name           string
		shards, perShd int
		want           [][]int // by shard: master, then replicas
	}{
		{"10 pods, 1 replica each → master i with 5+((i+1) mod 5)", 5, 2, [][]int{{0, 6}, {1, 7}, {2, 8}, {3, 9}, {4, 5}}},
		{"6 pods, 1 replica each → master i with 3+((i+1) mod 3)", 3, 2, [][]int{{0, 4}, {1, 5}, {2, 3}}},
		{"9 pods, 2 replicas each (cluster.nodes=9 cluster.replicas=2) → 0←4,5; 1←6,7; 2←8,3", 3, 3, [][]int{{0, 4, 5}, {1, 6, 7}, {2, 8, 3}}},
		{"15 pods, 2 replicas each → the rotated ordinals two at a time", 5, 3, [][]int{{0, 6, 7}, {1, 8, 9}, {2, 10, 11}, {3, 12, 13}, {4, 14, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := Scenario{Layout: LayoutBitnami, Shards: tc.shards, PodsPerShard: tc.perShd}
			var got [][]int
			for i := 0; i < tc.shards; i++ {
				var shard []int
				for o := 0; o < tc.perShd; o++ {
					shard = append(shard, sc.BitnamiOrdinal(i, o))
				}
				got = append(got, shard)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ordinals by shard (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBitnamiAsInstalled checks the chart's facts in the Bitnami layout's objects: the
// StatefulSet's selector, update strategy, pod management and claim template, the pods' requests
// and claims, and persistence.enabled=false.
func TestBitnamiAsInstalled(t *testing.T) {
	snap := BitnamiPostScaleDown().MustSnapshot()
	sts := snap.StatefulSets[0]
	if diff := cmp.Diff(map[string]string{AppLabel: BitnamiChartName, BitnamiInstanceLabel: "redis-cluster"}, sts.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if sts.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("updateStrategy %s, podManagementPolicy %s; want RollingUpdate, Parallel", sts.Spec.UpdateStrategy.Type, sts.Spec.PodManagementPolicy)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("%d claim templates, want 1", len(sts.Spec.VolumeClaimTemplates))
	}
	ct := sts.Spec.VolumeClaimTemplates[0]
	if ct.Name != BitnamiClaimTemplate || ct.Spec.StorageClassName != nil || ct.Spec.Resources.Requests.Storage().String() != "8Gi" {
		t.Errorf("claim template %s, class %v, size %s; want redis-data on the default class, 8Gi", ct.Name, ct.Spec.StorageClassName, ct.Spec.Resources.Requests.Storage())
	}
	p := podByName(snap.Pods, "redis-cluster-3")
	req := p.Spec.Containers[0].Resources.Requests
	if req.Cpu().String() != "100m" || req.Memory().String() != "128Mi" || req.StorageEphemeral().String() != "50Mi" {
		t.Errorf("requests %v, want cpu 100m, memory 128Mi, ephemeral-storage 50Mi", req)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "redis-data-redis-cluster-3" {
		t.Errorf("volumes %+v, want redis-data on claim redis-data-redis-cluster-3", p.Spec.Volumes)
	}

	sc := BitnamiPostScaleDown()
	sc.NoPersistence = true
	snap = sc.MustSnapshot()
	if n := len(snap.StatefulSets[0].Spec.VolumeClaimTemplates); n != 0 {
		t.Errorf("persistence.enabled=false: %d claim templates, want 0", n)
	}
	p = podByName(snap.Pods, "redis-cluster-3")
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].EmptyDir == nil {
		t.Errorf("persistence.enabled=false: volumes %+v, want redis-data as an emptyDir", p.Spec.Volumes)
	}
}

// TestBitnamiValuesRendered checks BitnamiValues rendered as the chart renders them: the presets
// through bitnami/common's affinities, redis.affinity in their place, the spread constraints as
// given, pdb.* into the release's budget, and a value the scenario does not render refused.
func TestBitnamiValuesRendered(t *testing.T) {
	release := map[string]string{AppLabel: BitnamiChartName, BitnamiInstanceLabel: "redis-cluster"}
	for _, tc := range []struct {
		name, values string
		// want checks the template's spec and the budgets.
		want    func(t *testing.T, spec corev1.PodSpec, pdbs []*policyv1.PodDisruptionBudget)
		wantErr string
	}{
		{
			name:   "podAntiAffinityPreset hard, nodeAffinityPreset hard → required terms on the hostname over the release and on the zones",
			values: "redis: {podAntiAffinityPreset: hard, nodeAffinityPreset: {type: hard, key: topology.kubernetes.io/zone, values: [zone-a, zone-b]}}",
			want: func(t *testing.T, spec corev1.PodSpec, _ []*policyv1.PodDisruptionBudget) {
				a := spec.Affinity
				if len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
					t.Fatalf("pod anti-affinity %+v, want one required term", a.PodAntiAffinity)
				}
				term := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
				if term.TopologyKey != corev1.LabelHostname || !cmp.Equal(term.LabelSelector.MatchLabels, release) {
					t.Errorf("required term %+v, want kubernetes.io/hostname over %v", term, release)
				}
				zones := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
				if zones.Key != corev1.LabelTopologyZone || !cmp.Equal(zones.Values, []string{"zone-a", "zone-b"}) {
					t.Errorf("node affinity %+v", zones)
				}
			},
		},
		{
			name:   "no preset value → the chart's soft default, no spread constraints",
			values: "pdb: {maxUnavailable: 2}",
			want: func(t *testing.T, spec corev1.PodSpec, pdbs []*policyv1.PodDisruptionBudget) {
				if p := spec.Affinity.PodAntiAffinity; len(p.PreferredDuringSchedulingIgnoredDuringExecution) != 1 || p.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight != 1 {
					t.Errorf("pod anti-affinity %+v, want the soft preset", p)
				}
				if len(spec.TopologySpreadConstraints) != 0 || spec.Affinity.NodeAffinity != nil {
					t.Errorf("spread %v, node affinity %v: want none", spec.TopologySpreadConstraints, spec.Affinity.NodeAffinity)
				}
				if len(pdbs) != 1 || pdbs[0].Spec.MaxUnavailable.IntValue() != 2 {
					t.Errorf("budgets %+v, want maxUnavailable 2", pdbs)
				}
			},
		},
		{
			name:   "redis.affinity → used as it is, the presets ignored; pdb.create false → no budget",
			values: "redis: {podAntiAffinityPreset: hard, affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {a: b}}}]}}}\npdb: {create: false}",
			want: func(t *testing.T, spec corev1.PodSpec, pdbs []*policyv1.PodDisruptionBudget) {
				if terms := spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution; len(terms) != 1 || terms[0].TopologyKey != corev1.LabelTopologyZone {
					t.Errorf("required terms %+v, want redis.affinity's", terms)
				}
				if len(pdbs) != 0 {
					t.Errorf("%d budgets, want none", len(pdbs))
				}
			},
		},
		{name: "a value the scenario does not render → refused", values: "redis: {podAffinityPreset: soft}", wantErr: `unknown field "podAffinityPreset"`},
		{name: "a preset of another name → refused", values: "redis: {podAntiAffinityPreset: strict}", wantErr: `redis.podAntiAffinityPreset "strict"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := Scenario{Layout: LayoutBitnami, Cluster: "redis-cluster", Shards: 3, PodsPerShard: 2, BitnamiValues: tc.values,
				Zones: []Zone{{Name: "zone-a", Nodes: []string{"n1", "n2"}}, {Name: "zone-b", Nodes: []string{"n3"}}}}
			snap, err := sc.Snapshot()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Snapshot: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want(t, snap.StatefulSets[0].Spec.Template.Spec, snap.PodDisruptionBudgets)
		})
	}
}
