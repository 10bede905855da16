package observe_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// answers is everything the commands derive from a snapshot: check's and plan's analysis (the
// violations, Pending pods with the filter's verdict on every node, each non-compliant cluster's
// plan with its candidates), the filter's report for every member on every node, and lint's
// findings.
func answers(t *testing.T, snap *policies.Snapshot, opts policies.Options) string {
	t.Helper()
	m, err := policies.Build(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	explain := map[string][]policies.FitReport{}
	for _, c := range m.Clusters {
		for i := range c.Members {
			explain[c.Key()] = append(explain[c.Key()], c.Explain(c.Current(), i))
		}
	}
	b, err := json.MarshalIndent(map[string]any{
		"analysis": report.Analyze(m, true, plan.Options{}),
		"explain":  explain,
		"lint":     lint.Lint(m, lint.Options{Relaxed: opts.RelaxedLimits}),
	}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// trimInputs are whole snapshots: the scenario suite (what examples/ holds, before any encoding),
// the examples/ files read whole, and synthetic clusters with every kind of drift.
func trimInputs(t *testing.T) map[string]*policies.Snapshot {
	t.Helper()
	in := map[string]*policies.Snapshot{}
	for _, c := range scenario.Suite() {
		snap, err := c.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		in["suite/"+c.Name] = snap
	}
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := observe.DecodeWhole(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		in["examples/"+filepath.Base(f)] = snap
	}
	in["rare-plugins"] = rarePluginsSnapshot()
	// Bitnami's chart under an alias: lint tells it by REDIS_NODES, which trimming must keep.
	in["bitnami-alias"] = scenario.BitnamiAliasPostScaleDown().MustSnapshot()
	for seed := uint64(1); seed <= 3; seed++ {
		in["synth/"+string(rune('0'+seed))] = synth.Generate(synth.Config{
			Seed: seed, Nodes: 40, Zones: 3, Namespaces: 3, Pods: 900, RedisClusters: 8, MinPods: 6, MaxPods: 24, DriftFraction: 0.8,
		})
	}
	return in
}

// TestTrimKeepsWhatTheModelReads checks that trimming drops nothing the model, the rules, the
// filter, the planner or the linter read: every answer on the trimmed objects equals the answer
// on the whole ones, with and without released replica claims and relaxed limits.
func TestTrimKeepsWhatTheModelReads(t *testing.T) {
	for name, snap := range trimInputs(t) {
		for _, opts := range []policies.Options{
			{RoleLabel: scenario.RoleLabel},
			{RoleLabel: scenario.RoleLabel, ReleaseReplicaClaims: true, RelaxedLimits: true},
		} {
			t.Run(name, func(t *testing.T) {
				want := answers(t, snap, opts)
				got := answers(t, observe.Trim(snap), opts)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("answers on trimmed objects differ (-whole +trimmed):\n%s", diff)
				}
			})
		}
	}
}

// TestTrimDropsWhatIsNotRead checks that trimming does drop what the API server adds that the
// model does not read, and shares equal parts between objects.
func TestTrimDropsWhatIsNotRead(t *testing.T) {
	snap := scenario.PostScaleDown().MustSnapshot()
	p := snap.Pods[0].DeepCopy()
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	p.Spec.Containers[0].Image = "redis:7"
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "redis", Ready: true}}
	p.Status.HostIP = "10.0.0.1"
	q := p.DeepCopy()
	q.Name = "other"
	got := observe.Trim(&policies.Snapshot{Pods: []*corev1.Pod{p, q}})
	a, b := got.Pods[0], got.Pods[1]
	if a.ManagedFields != nil || a.Annotations != nil || a.Spec.Containers[0].Image != "" || a.Spec.Containers[0].Env != nil ||
		a.Status.ContainerStatuses != nil || a.Status.HostIP != "" {
		t.Errorf("trimmed pod keeps what the model does not read: %+v", a)
	}
	r := p.DeepCopy()
	r.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}, {Name: policies.BitnamiNodesEnv, Value: "rc-0.rc-headless rc-1.rc-headless"}}
	if env := observe.Trim(&policies.Snapshot{Pods: []*corev1.Pod{r}}).Pods[0].Spec.Containers[0].Env; !cmp.Equal(env, []corev1.EnvVar{{Name: policies.BitnamiNodesEnv}}) {
		t.Errorf("trimmed env %v, want REDIS_NODES alone, without its value", env)
	}
	if a.Name != p.Name || a.Spec.NodeName != p.Spec.NodeName || a.Spec.Containers[0].Resources.Requests.Cpu().Cmp(*p.Spec.Containers[0].Resources.Requests.Cpu()) != 0 {
		t.Errorf("trimmed pod lost its name, node or requests: %+v", a)
	}
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || a.Spec.Affinity != b.Spec.Affinity || &a.Spec.TopologySpreadConstraints[0] != &b.Spec.TopologySpreadConstraints[0] {
		t.Error("equal containers, affinity and spread constraints of two pods are not shared")
	}
}

// rarePluginsSnapshot is the post-scale-down scenario with what the filter's less common plugins
// read: ephemeral-storage and GPU requests and allocatable, host ports (and a hostNetwork
// template whose container port the API server makes a host port), CSI and in-tree (AWS EBS)
// volumes, CSINodes with attach limits, a ReadWriteOncePod claim and an inline GCE PD, on members
// and non-members, with the fields the API server adds that the model does not read.
func rarePluginsSnapshot() *policies.Snapshot {
	snap := scenario.PostScaleDown().MustSnapshot()
	const driver = "ebs.csi.aws.com"
	gce := corev1.Volume{Name: "pd", VolumeSource: corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "pd-1"}}}
	for i, n := range snap.Nodes {
		fixture.WithAllocatable("ephemeral-storage=1Gi", "example.com/gpu=1")(n)
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"redis:7"}}}
		cn := fixture.CSINode(n.Name, fmt.Sprintf("%s=%d", driver, 1+i%3))
		cn.Spec.Drivers[0].TopologyKeys = []string{corev1.LabelTopologyZone}
		snap.CSINodes = append(snap.CSINodes, cn)
	}
	for i, sts := range snap.StatefulSets {
		tmpl := &sts.Spec.Template.Spec
		tmpl.HostNetwork = i%2 == 0
		tmpl.Containers[0].Ports = []corev1.ContainerPort{{Name: "redis", ContainerPort: 6379}, {Name: "bus", ContainerPort: 16379, HostPort: 16379 + int32(i%2)}}
		if i == 1 {
			tmpl.Volumes = append(tmpl.Volumes, gce)
		}
	}
	for i, p := range snap.Pods {
		fixture.Resources("cpu=100m", "memory=128Mi", "ephemeral-storage="+[]string{"50Mi", "600Mi"}[i%2])(p)
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "redis", ContainerPort: 6379}, {Name: "bus", ContainerPort: 16379, HostPort: 16379 + int32(i%2)}}
		claim := "data-" + p.Name
		pvc, pv := fixture.CSIClaim(p.Namespace, claim, "pv-"+claim, driver, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteOncePod}[i%2])
		pv.Spec.CSI.FSType = "ext4"
		if i%3 == 0 {
			pv.Spec.CSI = nil
			pv.Spec.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-" + claim, FSType: "ext4"}
		}
		snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, pvc)
		snap.PersistentVolumes = append(snap.PersistentVolumes, pv)
		fixture.WithNamedClaim("data", claim)(p)
	}
	snap.Pods = append(snap.Pods,
		fixture.Pod("gpu-job", fixture.Resources("example.com/gpu=1", "ephemeral-storage=500Mi"), fixture.On(snap.Nodes[0].Name)),
		fixture.Pod("exporter", fixture.HostPort(6379, "", ""), fixture.WithVolume(gce), fixture.On(snap.Nodes[1].Name)),
		fixture.Pod("reader", fixture.WithNamedClaim("data", "data-"+snap.Pods[1].Name), fixture.On(snap.Nodes[2].Name)),
	)
	return snap
}
