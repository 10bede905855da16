package policies_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

const (
	rNodeName     = "node(s) didn't match the requested node name"
	rNodePorts    = "node(s) didn't have free ports for the requested pod ports"
	rDisk         = "node(s) had no available disk"
	rRWOP         = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
	rVolumeLimits = "node(s) exceed max volume count"
	rCPU          = "Insufficient cpu"
	rMemory       = "Insufficient memory"
	rEphemeral    = "Insufficient ephemeral-storage"
	rPods         = "Too many pods"
	csiDriver     = "ebs.csi.aws.com"
)

// TestFilterPlugins proves the plugins that joined the filter with kube-scheduler's default set
// (NodeName, NodePorts, NodeResourcesFit beyond CPU and memory, VolumeRestrictions,
// NodeVolumeLimits) on a Pending member "in" of cluster c1, with other members placed (a member
// counts where it runs) and non-members: where it fits and why every other node does not, in
// kube-scheduler's words. Nodes: n1, n2 in zone-a, n3, n4 in zone-b.
func TestFilterPlugins(t *testing.T) {
	nodes := func(mut map[string][]fixture.NodeOption) []*corev1.Node {
		out := fixture.ZonedNodes(2, "a", "b")
		for _, n := range out {
			fixture.WithAllocatable("ephemeral-storage=100Gi")(n)
			for _, o := range mut[n.Name] {
				o(n)
			}
		}
		return out
	}
	member := func(name, node string, opts ...fixture.PodOption) *corev1.Pod {
		p := members([]string{node})[0]
		p.Name = name
		for _, o := range opts {
			o(p)
		}
		return p
	}
	chart := fixture.Resources("cpu=100m", "memory=128Mi", "ephemeral-storage=50Mi")
	rwopClaim, rwopPV := fixture.CSIClaim(fixture.Namespace, "data-in", "pv-in", csiDriver, corev1.ReadWriteOncePod)
	claim := func(name string) []any {
		pvc, pv := fixture.CSIClaim(fixture.Namespace, name, "pv-"+name, csiDriver, corev1.ReadWriteOnce)
		return []any{pvc, pv}
	}
	gcePD := corev1.Volume{Name: "pd", VolumeSource: corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "disk-1"}}}
	for _, tc := range []struct {
		name         string
		nodes        []*corev1.Node
		in           []fixture.PodOption
		objs         []any
		wantFits     []string
		wantRejected map[string][]string
	}{
		{
			name: "the chart's requests (ephemeral-storage 50Mi): n1 has 40Mi left beside a non-member, n2 none allocatable → n3, n4",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n1": {fixture.WithAllocatable("ephemeral-storage=1Gi")}, "n2": {fixture.WithAllocatable("ephemeral-storage=0")},
			}),
			in:           []fixture.PodOption{chart},
			objs:         []any{fixture.Pod("logs", fixture.Resources("ephemeral-storage=984Mi"), fixture.On("n1"))},
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rEphemeral: {"n1", "n2"}},
		},
		{
			name: "ephemeral storage other members request counts where they run: n3 holds a member with 60Mi of its 100Mi → n1, n2, n4",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n3": {fixture.WithAllocatable("ephemeral-storage=100Mi")},
			}),
			in:           []fixture.PodOption{chart},
			objs:         []any{member("m0", "n3", fixture.Resources("ephemeral-storage=60Mi"))},
			wantFits:     []string{"n1", "n2", "n4"},
			wantRejected: map[string][]string{rEphemeral: {"n3"}},
		},
		{
			name: "a node short of several resources is listed under each, as the scheduler's message counts it",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n1": {fixture.Allocatable("50m", "64Mi", 10), fixture.WithAllocatable("ephemeral-storage=10Mi")},
			}),
			in:           []fixture.PodOption{chart},
			wantFits:     []string{"n2", "n3", "n4"},
			wantRejected: map[string][]string{rCPU: {"n1"}, rMemory: {"n1"}, rEphemeral: {"n1"}},
		},
		{
			name: "an extended resource: only n2 and n4 offer example.com/gpu, a non-member holds n2's only one → n4",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n2": {fixture.WithAllocatable("example.com/gpu=1")}, "n4": {fixture.WithAllocatable("example.com/gpu=2")},
			}),
			in:           []fixture.PodOption{fixture.Resources("cpu=100m", "example.com/gpu=1")},
			objs:         []any{fixture.Pod("trainer", fixture.Resources("example.com/gpu=1"), fixture.On("n2"))},
			wantFits:     []string{"n4"},
			wantRejected: map[string][]string{"Insufficient example.com/gpu": {"n1", "n2", "n3"}},
		},
		{
			name: "an extended resource another member holds: n4's two GPUs, one a member's, the pod wants two → no node",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n4": {fixture.WithAllocatable("example.com/gpu=2")},
			}),
			in:           []fixture.PodOption{fixture.Resources("example.com/gpu=2")},
			objs:         []any{member("m0", "n4", fixture.Resources("example.com/gpu=1"))},
			wantRejected: map[string][]string{"Insufficient example.com/gpu": {"n1", "n2", "n3", "n4"}},
		},
		{
			name: "hugepages-2Mi: n1 offers 64Mi, n3 128Mi; the pod wants 100Mi → n3",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n1": {fixture.WithAllocatable("hugepages-2Mi=64Mi")}, "n3": {fixture.WithAllocatable("hugepages-2Mi=128Mi")},
			}),
			in:           []fixture.PodOption{fixture.Resources("memory=128Mi", "hugepages-2Mi=100Mi")},
			wantFits:     []string{"n3"},
			wantRejected: map[string][]string{"Insufficient hugepages-2Mi": {"n1", "n2", "n4"}},
		},
		{
			name: "a sidecar (restartable init container) adds to the containers, an init container counts as its maximum: 1 + 0.5 CPU on 1.2-CPU nodes n1, n2",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n1": {fixture.Allocatable("1200m", "8Gi", 10)}, "n2": {fixture.Allocatable("1200m", "8Gi", 10)},
			}),
			in: []fixture.PodOption{fixture.Resources("cpu=1"), fixture.WithInitContainer("setup", false, "cpu=1100m"), fixture.WithInitContainer("proxy", true, "cpu=500m")},
			// Sidecar 0.5 + main 1 = 1.5 > 1.2; the plain init container (1.1 + sidecars started
			// before it: none) stays below.
			wantFits:     []string{"n3", "n4"},
			wantRejected: map[string][]string{rCPU: {"n1", "n2"}},
		},
		{
			name: "pod overhead (RuntimeClass) adds to the requests: 128Mi + 100Mi on 200Mi nodes n3, n4",
			nodes: nodes(map[string][]fixture.NodeOption{
				"n3": {fixture.Allocatable("8", "200Mi", 10)}, "n4": {fixture.Allocatable("8", "200Mi", 10)},
			}),
			in:           []fixture.PodOption{fixture.WithOverhead("memory=100Mi")},
			wantFits:     []string{"n1", "n2"},
			wantRejected: map[string][]string{rMemory: {"n3", "n4"}},
		},
		{
			name:         "host port 6379: a non-member binds it on n1 (every address), another member on n3 → n2, n4",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.HostPort(6379, "", "")},
			objs:         []any{fixture.Pod("other", fixture.HostPort(6379, "", corev1.ProtocolTCP), fixture.On("n1")), member("m0", "n3", fixture.HostPort(6379, "", ""))},
			wantFits:     []string{"n2", "n4"},
			wantRejected: map[string][]string{rNodePorts: {"n1", "n3"}},
		},
		{
			name:     "host port 6379 on 10.0.0.1 beside one on 10.0.0.2 (n1), and UDP beside TCP (n2) → every node",
			nodes:    nodes(nil),
			in:       []fixture.PodOption{fixture.HostPort(6379, "10.0.0.1", "")},
			objs:     []any{fixture.Pod("a", fixture.HostPort(6379, "10.0.0.2", ""), fixture.On("n1")), fixture.Pod("b", fixture.HostPort(6379, "", corev1.ProtocolUDP), fixture.On("n2"))},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:         "a GCE PD inline disk: a non-member mounts it read-write on n2 → every node but n2",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithVolume(gcePD)},
			objs:         []any{fixture.Pod("other", fixture.WithVolume(gcePD), fixture.On("n2"))},
			wantFits:     []string{"n1", "n3", "n4"},
			wantRejected: map[string][]string{rDisk: {"n2"}},
		},
		{
			name:         "a ReadWriteOncePod claim a non-member mounts (on n3) → no node, on every node the same reason",
			nodes:        nodes(nil),
			in:           []fixture.PodOption{fixture.WithClaim("data-in")},
			objs:         []any{rwopClaim, rwopPV, fixture.Pod("reader", fixture.WithClaim("data-in"), fixture.On("n3"))},
			wantRejected: map[string][]string{rRWOP: {"n1", "n2", "n3", "n4"}},
		},
		{
			name:     "a ReadWriteOncePod claim nobody else mounts → every node",
			nodes:    nodes(nil),
			in:       []fixture.PodOption{fixture.WithClaim("data-in")},
			objs:     []any{rwopClaim, rwopPV},
			wantFits: []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:  "CSI attach limit 2 on n1 and n3: n1 holds a non-member's volume and a member's, n3 one volume; n2 and n4 report no limit → n2, n3, n4",
			nodes: nodes(nil),
			in:    []fixture.PodOption{fixture.WithClaim("data-in")},
			objs: append(append(append(claim("data-in"), claim("data-x")...), claim("data-m0")...),
				fixture.CSINode("n1", csiDriver+"=2"), fixture.CSINode("n3", csiDriver+"=2"), fixture.CSINode("n2", csiDriver),
				fixture.Pod("other", fixture.WithClaim("data-x"), fixture.On("n1")),
				member("m0", "n1", fixture.WithClaim("data-m0")),
				fixture.Pod("other2", fixture.WithClaim("data-x"), fixture.On("n3"))),
			wantFits:     []string{"n2", "n3", "n4"},
			wantRejected: map[string][]string{rVolumeLimits: {"n1"}},
		},
		{
			name:  "CSI attach limit 1 on every node: the pod's own volume already attached to n2 by a non-member is not new there → n2 only of n1, n2",
			nodes: nodes(nil),
			in:    []fixture.PodOption{fixture.WithClaim("data-shared")},
			objs: append(append(claim("data-shared"), claim("data-x")...),
				fixture.CSINode("n1", csiDriver+"=1"), fixture.CSINode("n2", csiDriver+"=1"), fixture.CSINode("n3", csiDriver+"=0"), fixture.CSINode("n4", csiDriver+"=0"),
				fixture.Pod("other", fixture.WithClaim("data-x"), fixture.On("n1")),
				fixture.Pod("sharer", fixture.WithClaim("data-shared"), fixture.On("n2"))),
			wantFits:     []string{"n2"},
			wantRejected: map[string][]string{rVolumeLimits: {"n1", "n3", "n4"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]any{incoming("x", tc.in...)}, tc.objs...)
			m, err := policies.Build(snapshotOf(tc.nodes, nil, objs...), policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			assertFilter(t, m, tc.wantFits, tc.wantRejected)
		})
	}
}

// assertFilter compares the filter's verdict on member "in" of cluster c1 with wantFits and
// wantRejected: Explain's, Candidates' and Fits' (whose message names every reason of a node).
func assertFilter(t *testing.T, m *policies.Model, wantFits []string, wantRejected map[string][]string) {
	t.Helper()
	c := clusterNamed(m, "c1")
	in := memberIndex(c, "in")
	rep := c.Explain(c.Current(), in)
	if diff := cmp.Diff(wantFits, rep.Fits); diff != "" {
		t.Errorf("fits (-want +got):\n%s\n%s", diff, rep.Summary())
	}
	if wantRejected == nil {
		wantRejected = map[string][]string{}
	}
	if diff := cmp.Diff(wantRejected, rep.Rejected); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	if rep.Nodes != len(m.Nodes) {
		t.Errorf("Explain judged %d nodes, the model has %d", rep.Nodes, len(m.Nodes))
	}
	want := wantFits
	if want == nil {
		want = []string{}
	}
	if diff := cmp.Diff(want, nodeNames(m, c.Candidates(c.Current(), in))); diff != "" {
		t.Errorf("Candidates (-want +got):\n%s", diff)
	}
	for n, node := range m.Nodes {
		ok, why := c.Fits(c.Current(), in, n)
		if ok != contains(want, node.Name) {
			t.Errorf("Fits(%s) = %v %q", node.Name, ok, why)
		}
		for reason, names := range wantRejected {
			if contains(names, node.Name) && !strings.Contains(why, reason) {
				t.Errorf("Fits(%s) = %q, lacks %q", node.Name, why, reason)
			}
		}
	}
}

// TestFilterNodeNameOfTemplate proves NodeName on a re-creation template: a StatefulSet whose
// template names n3 re-creates an evicted pod there only; the running pod's own nodeName is no
// constraint.
func TestFilterNodeNameOfTemplate(t *testing.T) {
	rc := redisCluster{shards: 1, perShard: 2, zones: []string{"a", "b"}, place: [][]string{{"n1", "n3"}},
		templateOpts: []fixture.PodOption{func(p *corev1.Pod) { p.Spec.NodeName = "n3" }}}
	m, err := policies.Build(snapshotOf(fixture.ZonedNodes(2, "a", "b"), []redisCluster{rc}), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	i := memberIndex(c, "redis-s0-0")
	p := c.Current()
	p[i] = -1
	rep := c.Explain(p, i)
	// n3 holds the shard's other pod: the template's zone spread constraint (zone-b would hold both
	// pods) rejects it, so the named node does not fit either; the others fail NodeName first.
	want := map[string][]string{rNodeName: {"n1", "n2", "n4"}, "node(s) didn't match pod topology spread constraints": {"n3"}}
	if diff := cmp.Diff(want, rep.Rejected); diff != "" {
		t.Errorf("rejections (-want +got):\n%s\n%s", diff, rep.Summary())
	}
}

// TestTemplateResourcesFromThePod proves where a re-created pod's requests come from: a pod of
// the StatefulSet's update revision is re-created as the API server admitted it (here with an
// injected sidecar requesting 500m the template lacks), a pod of an older revision from the
// template with the API server's pod defaults (requests default to limits).
func TestTemplateResourcesFromThePod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		revision string
		wantFits []string
	}{
		{name: "pod of the update revision: its injected sidecar counts (1.5 CPU) → n2 (2 CPUs) only", revision: "rev-2", wantFits: []string{"n2"}},
		{name: "pod of an older revision: the template's limits become requests (1 CPU) → n1, n2", revision: "rev-1", wantFits: []string{"n1", "n2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*corev1.Node{
				fixture.Node("n1", fixture.InZone("zone-a"), fixture.Allocatable("1200m", "8Gi", 10)),
				fixture.Node("n2", fixture.InZone("zone-a"), fixture.Allocatable("2", "8Gi", 10)),
			}
			rc := redisCluster{shards: 1, perShard: 1, zones: []string{"a"}, place: [][]string{{"n1"}},
				podOpts: []fixture.PodOption{
					fixture.Resources("cpu=1"), fixture.WithInitContainer("istio-proxy", true, "cpu=500m"),
					fixture.WithLabels(appsv1.ControllerRevisionHashLabelKey, tc.revision),
				},
				templateOpts: []fixture.PodOption{func(p *corev1.Pod) {
					p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: fixture.ResourceList("cpu=1")}
				}},
			}
			snap := snapshotOf(nodes, []redisCluster{rc})
			snap.StatefulSets[0].Status.UpdateRevision = "rev-2"
			m, err := policies.Build(snap, policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			p := c.Current()
			p[0] = -1
			if diff := cmp.Diff(tc.wantFits, nodeNames(m, c.Candidates(p, 0))); diff != "" {
				t.Errorf("Candidates (-want +got):\n%s\n%s", diff, c.Explain(p, 0).Summary())
			}
		})
	}
}

// TestFilterHostNetworkTemplate proves the API server's host-port default on a re-created pod:
// a template with hostNetwork and container port 6379 binds host port 6379, so two members never
// share a node.
func TestFilterHostNetworkTemplate(t *testing.T) {
	rc := redisCluster{shards: 2, perShard: 1, zones: []string{"a", "b"}, place: [][]string{{"n1"}, {"n3"}},
		templateOpts: []fixture.PodOption{func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 6379}}
			p.Spec.Affinity, p.Spec.TopologySpreadConstraints = nil, nil
		}},
		podOpts: []fixture.PodOption{fixture.HostPort(6379, "", "")},
	}
	m, err := policies.Build(snapshotOf(fixture.ZonedNodes(2, "a", "b"), []redisCluster{rc}), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	i := memberIndex(c, "redis-s0-0")
	p := c.Current()
	p[i] = -1
	want := map[string][]string{rNodePorts: {"n3"}}
	if diff := cmp.Diff(want, c.Explain(p, i).Rejected); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
}

// TestStateMatchesCandidatesRarePlugins checks the incremental State's filter against Candidates
// on random walks of Redis clusters that use the plugins few pods need: ephemeral-storage and
// extended-resource requests on nodes with little of either, host ports, and CSI volumes on nodes
// with attach limits, on the running pods, the templates (not always alike) and non-member pods.
func TestStateMatchesCandidatesRarePlugins(t *testing.T) {
	r := rand.New(rand.NewPCG(20261127, 3))
	for it := 0; it < 120; it++ {
		sc, tweak := randomRedis(r)
		snap := sc.MustSnapshot()
		tweak(snap)
		rarePlugins(r, snap)
		m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
		if err != nil {
			t.Fatal(err)
		}
		walk(t, r, m.Clusters[0], 25, fmt.Sprintf("rare-plugins case %d %+v", it, sc))
	}
}

// rarePlugins gives snap's nodes random ephemeral storage, GPUs and CSI attach limits, its pods
// and templates random requests of both, host port 6379 and a CSI claim each, and adds
// non-member pods using some of each.
func rarePlugins(r *rand.Rand, snap *policies.Snapshot) {
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	for _, n := range snap.Nodes {
		fixture.WithAllocatable("ephemeral-storage="+pick("0", "100Mi", "1Gi"), "example.com/gpu="+pick("0", "1", "2"))(n)
		if r.IntN(3) > 0 {
			snap.CSINodes = append(snap.CSINodes, fixture.CSINode(n.Name, csiDriver+"="+pick("1", "2", "3")))
		}
	}
	spec := func(s *corev1.PodSpec) {
		reqs := []string{"cpu=100m", "memory=128Mi"}
		if r.IntN(2) == 0 {
			reqs = append(reqs, "ephemeral-storage=50Mi")
		}
		if r.IntN(3) == 0 {
			reqs = append(reqs, "example.com/gpu=1")
		}
		s.Containers[0].Resources = fixture.ResourceRequirements(reqs...)
		s.Containers[0].Ports = nil
		if r.IntN(3) == 0 {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 6379, HostPort: 6379}}
		}
	}
	for _, sts := range snap.StatefulSets {
		spec(&sts.Spec.Template.Spec)
	}
	var extra []*corev1.Pod
	for _, p := range snap.Pods {
		spec(&p.Spec)
		claim := "data-" + p.Name
		if r.IntN(4) > 0 {
			pvc, pv := fixture.CSIClaim(p.Namespace, claim, "pv-"+claim, csiDriver, corev1.ReadWriteOnce)
			snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, pvc)
			snap.PersistentVolumes = append(snap.PersistentVolumes, pv)
			fixture.WithNamedClaim("data", claim)(p)
		}
	}
	for k := range 1 + r.IntN(4) {
		n := snap.Nodes[r.IntN(len(snap.Nodes))].Name
		opts := []fixture.PodOption{fixture.On(n), fixture.Resources("ephemeral-storage="+pick("10Mi", "60Mi"), "example.com/gpu="+pick("0", "1"))}
		if r.IntN(2) == 0 {
			opts = append(opts, fixture.HostPort(6379, "", ""))
		}
		if r.IntN(2) == 0 {
			claim := fmt.Sprintf("other-%d", k)
			pvc, pv := fixture.CSIClaim(fixture.Namespace, claim, "pv-"+claim, csiDriver, corev1.ReadWriteOnce)
			snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, pvc)
			snap.PersistentVolumes = append(snap.PersistentVolumes, pv)
			opts = append(opts, fixture.WithNamedClaim("data", claim))
		}
		extra = append(extra, fixture.Pod(fmt.Sprintf("other-%d", k), opts...))
	}
	snap.Pods = append(snap.Pods, extra...)
}
