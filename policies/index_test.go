package policies_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// TestNonMembersMatching checks that the pods a cluster's selectors count besides its members
// (spread constraints' and pod affinity terms' external pods) are the same whether they are
// taken from the cluster's NotMembers, when the selector requires the cluster label to be the
// cluster's name in its own namespace, or from the model's label indexes.
func TestNonMembersMatching(t *testing.T) {
	job := func(name, cluster, node string) *corev1.Pod {
		return fixture.Pod(name, fixture.WithLabels(policies.DefaultClusterLabel, cluster, "app.kubernetes.io/name", "redis-cluster"), fixture.On(node), func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, Controller: ptr.To(true)}}
		})
	}
	snap := bitnamiLike()
	for _, p := range snap.Pods {
		p.Labels["app.kubernetes.io/name"] = "redis-cluster"
	}
	pending := job("rc-update-pending", "rc", "")
	pending.Spec.NodeName = ""
	elsewhere := job("rc-update-elsewhere", "rc", "n4")
	elsewhere.Namespace = "other"
	snap.Pods = append(snap.Pods,
		job("rc-update-1", "rc", "n2"), job("rc-update-2", "rc", "n5"), pending, elsewhere,
		job("other-update", "other-cluster", "n3"),
	)
	m, err := policies.Build(snap, policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var c *policies.Cluster
	for _, cl := range m.Clusters {
		if cl.Name == "rc" {
			c = cl
		}
	}
	if c == nil {
		t.Fatal("no cluster rc")
	}
	ns := c.Namespace
	for _, tc := range []struct {
		name       string
		sel        string
		namespaces []string
		wantOwn    bool
		want       []string
	}{
		{name: "cluster label = its name, its namespace → its scheduled NotMembers", sel: policies.DefaultClusterLabel + "=rc", namespaces: []string{ns}, wantOwn: true,
			want: []string{ns + "/rc-update-1", ns + "/rc-update-2"}},
		{name: "== and another label → its NotMembers that match both", sel: policies.DefaultClusterLabel + "==rc,app.kubernetes.io/name=redis-cluster", namespaces: []string{ns}, wantOwn: true,
			want: []string{ns + "/rc-update-1", ns + "/rc-update-2"}},
		{name: "in (its name) → its NotMembers", sel: policies.DefaultClusterLabel + " in (rc)", namespaces: []string{ns}, wantOwn: true,
			want: []string{ns + "/rc-update-1", ns + "/rc-update-2"}},
		{name: "in (its name, another) → the indexes: the other cluster's pod too", sel: policies.DefaultClusterLabel + " in (rc,other-cluster)", namespaces: []string{ns},
			want: []string{ns + "/other-update", ns + "/rc-update-1", ns + "/rc-update-2"}},
		{name: "another cluster's name → the indexes", sel: policies.DefaultClusterLabel + "=other-cluster", namespaces: []string{ns},
			want: []string{ns + "/other-update"}},
		{name: "its name in every namespace → the indexes, the other namespace's pod too", sel: policies.DefaultClusterLabel + "=rc",
			want: []string{"other/rc-update-elsewhere", ns + "/rc-update-1", ns + "/rc-update-2"}},
		{name: "no cluster label requirement → the indexes", sel: "app.kubernetes.io/name=redis-cluster", namespaces: []string{ns},
			want: []string{ns + "/other-update", ns + "/rc-update-1", ns + "/rc-update-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := labels.Parse(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			got, ref, own := c.NonMembersMatching(sel, tc.namespaces)
			if own != tc.wantOwn {
				t.Errorf("took the cluster's NotMembers: %v, want %v", own, tc.wantOwn)
			}
			if diff := cmp.Diff(ref, got); diff != "" {
				t.Errorf("pods differ from the label indexes' (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExternalAntiDomains checks the domains where pods that are not members of a cluster have a
// required anti-affinity term matching a member's pod or its re-creation template: the
// anti-affinity index (which sets apart the terms that can only match their own cluster's pods)
// finds what a scan of every scheduled pod's terms finds. Clusters: rc, rc2 in the same
// namespace, each pod with a term on its own cluster's name (rc2's on a node of its own), an
// app pod whose term selects rc's pods, and a StatefulSet of rc whose template names rc2 (its
// re-created pods would be rc2's: rc2's terms apply to them).
func TestExternalAntiDomains(t *testing.T) {
	own := func(name string) map[string]string { return map[string]string{policies.DefaultClusterLabel: name} }
	cluster := func(name string, nodes ...string) (*appsv1.StatefulSet, []*corev1.Pod) {
		tmpl := fixture.TemplateOf(fixture.Pod("t", fixture.WithLabels(policies.DefaultClusterLabel, name), fixture.AntiAffinity(policies.LabelHostname, own(name))))
		sts := fixture.StatefulSet(name, int32(len(nodes)), own(name), tmpl)
		var pods []*corev1.Pod
		for i, n := range nodes {
			pods = append(pods, fixture.StatefulSetPod(sts, i, fixture.On(n)))
		}
		return sts, pods
	}
	rc, rcPods := cluster("rc", "n1", "n2", "n3")
	rc2, rc2Pods := cluster("rc2", "n4", "n5")
	renamed, renamedPods := cluster("rc-extra", "n6")
	for _, p := range renamedPods {
		p.Labels[policies.DefaultClusterLabel] = "rc" // a member of rc, re-created as rc2's
	}
	renamed.Spec.Template.Labels[policies.DefaultClusterLabel] = "rc2"
	app := fixture.Pod("app", fixture.On("n7"), fixture.AntiAffinity(policies.LabelHostname, own("rc")), func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app-5d9c", Controller: ptr.To(true)}}
	})
	crafted := &policies.Snapshot{Nodes: fixture.ZonedNodes(3, "a", "b", "c"), StatefulSets: []*appsv1.StatefulSet{rc, rc2, renamed}}
	crafted.Pods = append(append(append(append(crafted.Pods, rcPods...), rc2Pods...), renamedPods...), app)
	for _, tc := range []struct {
		name string
		snap *policies.Snapshot
		want []string // domains some member's pod or template must have ("cluster: key=value")
	}{
		{"two clusters of one namespace, an app's term on one, a template naming the other", crafted, []string{
			"redis/rc: kubernetes.io/hostname=n7",                                        // the app's term on rc
			"redis/rc: kubernetes.io/hostname=n4", "redis/rc: kubernetes.io/hostname=n5", // rc2's terms on rc-extra's template
		}},
		{"a scaled-down benchmark snapshot (terms on their own cluster only: none)", synth.Generate(synth.Scaled(0.02)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := policies.Build(tc.snap, policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, c := range m.Clusters {
				got, want := c.ExternalAntiDomains()
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("cluster %s: domains per member (pod, template) differ from a scan of every pod (-want +got):\n%s", c.Key(), diff)
				}
				for _, g := range got {
					for _, d := range g {
						found = append(found, c.Key()+": "+d)
					}
				}
			}
			for _, d := range tc.want {
				if !slices.Contains(found, d) {
					t.Errorf("no member has the external anti-affinity domain %s; found %q", d, found)
				}
			}
		})
	}
}
