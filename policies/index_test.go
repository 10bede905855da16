package policies_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
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
