package policies_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

const (
	rTaint         = "node(s) had untolerated taint(s)"
	rUnschedulable = "node(s) were unschedulable"
	rNodeAffinity  = "node(s) didn't match Pod's node affinity/selector"
	rAnti          = "node(s) didn't match pod anti-affinity rules"
	rExistingAnti  = "node(s) didn't satisfy existing pods anti-affinity rules"
	rAffinity      = "node(s) didn't match pod affinity rules"
	rPVAffinity    = "node(s) didn't match PersistentVolume's node affinity"
	rVolumeZone    = "node(s) had no available volume zone"
)

// TestFilter proves the feasibility filter, plugin by plugin, on a Pending member "in" of cluster
// c1: where it fits (Candidates, Fits) and why every other node does not (Explain, in
// kube-scheduler's words). Nodes: n1, n2 in zone-a, n3, n4 in zone-b.
func TestFilter(t *testing.T) {
	zoneKey, hostKey := corev1.LabelTopologyZone, corev1.LabelHostname
	nodes := func(mut map[string][]fixture.NodeOption) []*corev1.Node {
		out := fixture.ZonedNodes(2, "a", "b")
		for _, n := range out {
			for _, o := range mut[n.Name] {
				o(n)
			}
		}
		return out
	}
	web := map[string]string{scenario.AppLabel: "web"}
	pvcA, pvA := fixture.BoundClaim(fixture.Namespace, "data-in", "pv-"+"data-in", zoneKey, "zone-a")
	zoneLabelledPV := func() []any {
		pvc, pv := fixture.BoundClaim(fixture.Namespace, "data-in", "pv-"+"data-in", zoneKey, "zone-b")
		pv.Spec.NodeAffinity = nil
		pv.Labels = map[string]string{zoneKey: "zone-b"}
		return []any{pvc, pv}
	}
	for _, tc := range []struct {
		name         string
		nodes        []*corev1.Node
		in           []fixture.PodOption
		objs         []any // other pods (members when labelled c1), PVCs, PVs, namespaces
		opts         policies.Options
		wantFits     []string
		wantRejected map[string][]string
	}{
		{
			name: "taints: NoSchedule (n1) and NoExecute (n2) reject, PreferNoSchedule (n3) does not",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n1": {fixture.Tainted("a", "x", corev1.TaintEffectNoSchedule)}, "n2": {fixture.Tainted("b", "x", corev1.TaintEffectNoExecute)},
				"n3": {fixture.Tainted("c", "x", corev1.TaintEffectPreferNoSchedule)},
			}),
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rTaint: {"n1", "n2"}},
		},
		{
			name: "taints: a toleration for n1's NoSchedule taint lets it in; n2's NoExecute still rejects",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n1": {fixture.Tainted("a", "x", corev1.TaintEffectNoSchedule)}, "n2": {fixture.Tainted("b", "x", corev1.TaintEffectNoExecute)},
			}),
			in:           []fixture.PodOption{fixture.Tolerates("a", corev1.TaintEffectNoSchedule)},
			wantFits:     []string{"n1", "n3", "n4"},
			wantRejected: map[string][]string{rTaint: {"n2"}},
		},
		{
			name:         "cordoned n1 → were unschedulable",
			nodes:        nodes(map[string][]fixture.NodeOption{"n1": {fixture.Cordoned()}}),
			wantFits:     []string{"n2", "n3", "n4"},
			wantRejected: map[string][]string{rUnschedulable: {"n1"}},
		},
		{
			name:     "cordoned n1, pod tolerating node.kubernetes.io/unschedulable:NoSchedule → fits n1 (NodeUnschedulable)",
			nodes:    nodes(map[string][]fixture.NodeOption{"n1": {fixture.Cordoned()}}),
			in:       []fixture.PodOption{fixture.Tolerates(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:         "nodeSelector disktype=ssd → only n2",
			nodes:        nodes(map[string][]fixture.NodeOption{"n2": {fixture.NodeLabel("disktype", "ssd")}}),
			in:           []fixture.PodOption{fixture.NodeSelector("disktype", "ssd")},
			wantFits:     []string{"n2"},
			wantRejected: map[string][]string{rNodeAffinity: {"n1", "n3", "n4"}},
		},
		{
			name:         "required node affinity zone In [zone-b] → n3, n4",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.RequiredIn(zoneKey, "zone-b")},
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rNodeAffinity: {"n1", "n2"}},
		},
		{
			name:         "incoming pod's anti-affinity (zone, app=web) with a web pod on n1 → zone-a rejected",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.AntiAffinity(zoneKey, web)},
			objs:         []any{fixture.Pod("web", fixture.WithLabels(scenario.AppLabel, "web"), fixture.On("n1"))},
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rAnti: {"n1", "n2"}},
		},
		{
			name:  "incoming pod's anti-affinity lists namespace other: a web pod there (n3) counts, one in its own namespace (n1) does not",
			nodes: nodes(nil),
			in:    []fixture.PodOption{fixture.AntiAffinity(zoneKey, web, fixture.TermNamespaces("other"))},
			objs: []any{
				fixture.Pod("web", fixture.WithLabels(scenario.AppLabel, "web"), fixture.On("n1")),
				fixture.Pod("web-other", fixture.WithLabels(scenario.AppLabel, "web"), fixture.InNamespace("other"), fixture.On("n3")),
			},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rAnti: {"n3", "n4"}},
		},
		{
			name:         "an existing pod's anti-affinity (zone, app=redis) on n3 matches the incoming pod → zone-b rejected",
			nodes:        nodes(nil),
			objs:         []any{fixture.Pod("guard", fixture.WithLabels(scenario.AppLabel, "guard"), fixture.On("n3"), fixture.AntiAffinity(zoneKey, redisPods))},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rExistingAnti: {"n3", "n4"}},
		},
		{
			name:  "an existing pod's anti-affinity in namespace other with namespaceSelector team=cache; namespace redis is labelled team=cache → zone-b rejected",
			nodes: nodes(nil),
			objs: []any{
				fixture.Pod("guard", fixture.InNamespace("other"), fixture.On("n3"), fixture.AntiAffinity(zoneKey, redisPods, fixture.TermNamespaceSelector(map[string]string{"team": "cache"}))),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixture.Namespace, Labels: map[string]string{"team": "cache"}}},
			},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rExistingAnti: {"n3", "n4"}},
		},
		{
			name:  "the same term, namespace redis not labelled team=cache → no effect",
			nodes: nodes(nil),
			objs: []any{
				fixture.Pod("guard", fixture.InNamespace("other"), fixture.On("n3"), fixture.AntiAffinity(zoneKey, redisPods, fixture.TermNamespaceSelector(map[string]string{"team": "cache"}))),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixture.Namespace}},
			},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:  "namespaceSelector on kubernetes.io/metadata.name=redis without Namespace objects (the label the API server sets) → zone-b rejected",
			nodes: nodes(nil),
			objs: []any{
				fixture.Pod("guard", fixture.InNamespace("other"), fixture.On("n3"), fixture.AntiAffinity(zoneKey, redisPods, fixture.TermNamespaceSelector(map[string]string{corev1.LabelMetadataName: fixture.Namespace}))),
			},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rExistingAnti: {"n3", "n4"}},
		},
		{
			name:         "a running member's anti-affinity (hostname, shard x) on n1 matches the incoming pod of shard x → n1 rejected (existing pods)",
			nodes:        nodes(nil),
			objs:         []any{members([]string{"n1"}, fixture.AntiAffinity(hostKey, map[string]string{scenario.ShardLabel: "x"}))[0]},
			wantFits:     []string{"n2", "n3", "n4"},
			wantRejected: map[string][]string{rExistingAnti: {"n1"}},
		},
		{
			name:         "the incoming pod's anti-affinity (zone, shard x) and a running member of shard x on n1 → zone-a rejected",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.AntiAffinity(zoneKey, map[string]string{scenario.ShardLabel: "x"})},
			objs:         []any{members([]string{"n1"})[0]},
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rAnti: {"n1", "n2"}},
		},
		{
			name:         "required pod affinity (zone, app=cache) with a cache pod on n3 → zone-b only",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.PodAffinity(zoneKey, map[string]string{scenario.AppLabel: "cache"})},
			objs:         []any{fixture.Pod("cache", fixture.WithLabels(scenario.AppLabel, "cache"), fixture.On("n3"))},
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rAffinity: {"n1", "n2"}},
		},
		{
			name:     "required pod affinity that no pod matches anywhere, but the pod matches its own term → every node (the first pod of a series)",
			nodes:    nodes(nil),
			in:       []fixture.PodOption{fixture.PodAffinity(zoneKey, redisPods)},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:         "required pod affinity that no pod matches anywhere and the pod does not match itself → no node",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.PodAffinity(zoneKey, map[string]string{scenario.AppLabel: "cache"})},
			wantRejected: map[string][]string{rAffinity: {"n1", "n2", "n3", "n4"}},
		},
		{
			name:         "required pod affinity, self-match rule: a node lacking the term's key (n4) is still rejected",
			nodes:        nodes(map[string][]fixture.NodeOption{"n4": {fixture.WithoutNodeLabel(zoneKey)}}),
			in:           []fixture.PodOption{fixture.PodAffinity(zoneKey, redisPods)},
			wantFits:     []string{"n1", "n2", "n3"},
			wantRejected: map[string][]string{rAffinity: {"n4"}},
		},
		{
			name:  "required pod affinity with two terms counts pods matching both: cache+db on n3 satisfies n3 only; cache (n1) and db (n2) alone do not",
			nodes: nodes(nil),
			in:    []fixture.PodOption{fixture.PodAffinity(zoneKey, map[string]string{scenario.AppLabel: "cache"}), fixture.PodAffinity(hostKey, map[string]string{"tier": "db"})},
			objs: []any{
				fixture.Pod("both", fixture.WithLabels(scenario.AppLabel, "cache", "tier", "db"), fixture.On("n3")),
				fixture.Pod("cache", fixture.WithLabels(scenario.AppLabel, "cache"), fixture.On("n1")),
				fixture.Pod("db", fixture.WithLabels("tier", "db"), fixture.On("n2")),
			},
			wantFits:     []string{"n3"},
			wantRejected: map[string][]string{rAffinity: {"n1", "n2", "n4"}},
		},
		{
			name: "allocatable CPU, memory and pods: n1 lacks CPU, n2 memory, n3 a pod slot",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n1": {fixture.Allocatable("1", "8Gi", 10)}, "n2": {fixture.Allocatable("8", "256Mi", 10)}, "n3": {fixture.Allocatable("8", "8Gi", 1)},
			}),
			objs: []any{
				fixture.Pod("busy-cpu", fixture.Requests("950m", "1Mi"), fixture.On("n1")),
				fixture.Pod("busy-mem", fixture.Requests("10m", "200Mi"), fixture.On("n2")),
				fixture.Pod("busy-slot", fixture.Requests("10m", "1Mi"), fixture.On("n3")),
			},
			wantFits:     []string{"n4"},
			wantRejected: map[string][]string{"Insufficient cpu": {"n1"}, "Insufficient memory": {"n2"}, "Too many pods": {"n3"}},
		},
		{
			name:         "volume topology: the claim is bound to a PV pinned to zone-a (PV.spec.nodeAffinity) → zone-a only",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithClaim("data-in")},
			objs:         []any{pvcA, pvA},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rPVAffinity: {"n3", "n4"}},
		},
		{
			name:         "volume topology, ReleaseReplicaClaims and a Pending replica → placed with its own claim (a move releases claims after an eviction: TestClaimRelease): zone-a only",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithClaim("data-in"), fixture.WithLabels(scenario.RoleLabel, "replica")},
			objs:         []any{pvcA, pvA},
			opts:         policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rPVAffinity: {"n3", "n4"}},
		},
		{
			name:         "volume topology, ReleaseReplicaClaims and a Pending master → zone-a only",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithClaim("data-in"), fixture.WithLabels(scenario.RoleLabel, "master")},
			objs:         []any{pvcA, pvA},
			opts:         policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rPVAffinity: {"n3", "n4"}},
		},
		{
			name:         "volume topology, ReleaseReplicaClaims and an unknown role → not released: zone-a only",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithClaim("data-in")},
			objs:         []any{pvcA, pvA},
			opts:         policies.Options{ReleaseReplicaClaims: true},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rPVAffinity: {"n3", "n4"}},
		},
		{
			name:         "volume topology without ReleaseReplicaClaims, a replica → zone-a only (off by default)",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithClaim("data-in"), fixture.WithLabels(scenario.RoleLabel, "replica")},
			objs:         []any{pvcA, pvA},
			opts:         policies.Options{RoleLabel: scenario.RoleLabel},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rPVAffinity: {"n3", "n4"}},
		},
		{
			name:         "a PV labelled zone-b without node affinity (VolumeZone) → zone-b only",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithClaim("data-in")},
			objs:         zoneLabelledPV(),
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rVolumeZone: {"n1", "n2"}},
		},
		{
			name:     "an unbound claim does not restrict",
			nodes:    nodes(nil),
			in:       []fixture.PodOption{fixture.WithClaim("data-in")},
			objs:     []any{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-in", Namespace: fixture.Namespace}}},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]any{incoming("x", tc.in...)}, tc.objs...)
			m, err := policies.Build(snapshotOf(tc.nodes, nil, objs...), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			c := clusterNamed(m, "c1")
			in := memberIndex(c, "in")
			rep := c.Explain(c.Current(), in)
			if diff := cmp.Diff(tc.wantFits, rep.Fits); diff != "" {
				t.Errorf("fits (-want +got):\n%s\n%s", diff, rep.Summary())
			}
			wantRejected := tc.wantRejected
			if wantRejected == nil {
				wantRejected = map[string][]string{}
			}
			if diff := cmp.Diff(wantRejected, rep.Rejected); diff != "" {
				t.Errorf("rejections (-want +got):\n%s", diff)
			}
			cands := nodeNames(m, c.Candidates(c.Current(), in))
			want := tc.wantFits
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, cands); diff != "" {
				t.Errorf("Candidates (-want +got):\n%s", diff)
			}
			for n, node := range m.Nodes {
				ok, why := c.Fits(c.Current(), in, n)
				if ok != contains(want, node.Name) {
					t.Errorf("Fits(%s) = %v %q", node.Name, ok, why)
				}
				if !ok && why == "" {
					t.Errorf("Fits(%s) = false without a reason", node.Name)
				}
			}
		})
	}
}

// TestFilterSpecInEffect proves which spec the filter places: a member evicted from its node is
// re-created from its StatefulSet's current template, a Pending pod is placed with its own spec.
// The running pods carry hostname maxSkew 1 (written for a larger cluster); the templates carry
// the relaxed N=6 value 2.
func TestFilterSpecInEffect(t *testing.T) {
	oldMaxSkew := func(p *corev1.Pod) {
		for i := range p.Spec.TopologySpreadConstraints {
			c := &p.Spec.TopologySpreadConstraints[i]
			if c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule {
				c.MaxSkew = 1
			}
		}
	}
	for _, tc := range []struct {
		name  string
		place [][]string
		pod   string
		evict bool
		want  []string
	}{
		{
			// Without s0-0: n1, n2, n3, n5, n6 hold 1, n4 0 (global minimum 0). Template maxSkew 2:
			// occupied nodes reach 2 ≤ 2; zone-b is excluded by shard 0's zone anti-affinity (s0-1 on n3).
			name:  "s0-0 evicted from n1 is re-created from the template (maxSkew 2) → n1, n2, n5, n6",
			place: [][]string{{"n1", "n3"}, {"n1", "n5"}, {"n2", "n6"}},
			pod:   "redis-s0-0", evict: true,
			want: []string{"n1", "n2", "n5", "n6"},
		},
		{
			name:  "s0-0 Pending is placed with its own spec (maxSkew 1) → no node: occupied ones reach 2 > 1, n4 is in shard 0's zone",
			place: [][]string{{"", "n3"}, {"n1", "n5"}, {"n2", "n6"}},
			pod:   "redis-s0-0",
			want:  []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := redisCluster{shards: 3, perShard: 2, zones: []string{"a", "b", "c"}, relaxed: true, place: tc.place, podOpts: []fixture.PodOption{oldMaxSkew}}
			m, err := policies.Build(snapshotOf(fixture.ZonedNodes(2, "a", "b", "c"), []redisCluster{rc}), policies.Options{RelaxedLimits: true})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			i := memberIndex(c, tc.pod)
			p := c.Current()
			if tc.evict {
				p[i] = -1
			}
			got := nodeNames(m, c.Candidates(p, i))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Candidates (-want +got):\n%s\n%s", diff, c.Explain(p, i).Summary())
			}
		})
	}
}

// TestTemplate pins how a re-creation template is derived from a pod and its StatefulSet.
func TestTemplate(t *testing.T) {
	rc := redisCluster{shards: 1, perShard: 2, zones: []string{"a", "b"}, place: [][]string{{"n1", "n3"}},
		podOpts: []fixture.PodOption{fixture.WithClaim("data"), fixture.WithLabels(scenario.RoleLabel, "master")}}
	snap := snapshotOf(fixture.ZonedNodes(2, "a", "b"), []redisCluster{rc})
	sts := snap.StatefulSets[0]
	sts.Status.UpdateRevision = "rev-2"
	sts.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	sts.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "new", Operator: corev1.TolerationOpExists}}
	for _, p := range snap.Pods {
		p.Labels["controller-revision-hash"] = "rev-1"
	}
	m, err := policies.Build(snap, policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := m.Clusters[0].Members[0]
	tp := mem.Template()
	if tp == mem.Pod {
		t.Fatal("Template is the pod itself")
	}
	wantLabels := map[string]string{
		scenario.AppLabel: "redis", policies.DefaultClusterLabel: "redis", scenario.ShardLabel: "redis-s0",
		"statefulset.kubernetes.io/pod-name": "redis-s0-0", "apps.kubernetes.io/pod-index": "0", "controller-revision-hash": "rev-2",
	}
	if diff := cmp.Diff(wantLabels, tp.Labels); diff != "" {
		t.Errorf("template labels (-want +got):\n%s", diff)
	}
	var vols []string
	for _, v := range tp.Spec.Volumes {
		vols = append(vols, v.Name)
	}
	if diff := cmp.Diff([]string{"data", "config"}, vols); diff != "" {
		t.Errorf("template volumes (-want +got):\n%s", diff)
	}
	if tp.Name != mem.Pod.Name || tp.Namespace != mem.Pod.Namespace || tp.Spec.NodeName != "" || tp.DeletionTimestamp != nil {
		t.Errorf("template identity: %s/%s on %q", tp.Namespace, tp.Name, tp.Spec.NodeName)
	}
	if len(tp.Spec.Tolerations) != 1 || tp.Spec.Tolerations[0].Key != "new" {
		t.Errorf("template tolerations = %v, want the StatefulSet's", tp.Spec.Tolerations)
	}
	if mem.Pod.Spec.Tolerations != nil || mem.Pod.Labels["controller-revision-hash"] != "rev-1" {
		t.Errorf("Build modified the pod")
	}
}
