package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLayouts checks that every layout sets a valid policy (its fields pass validation) and that
// ApplyLayout fills only what the policy leaves empty.
func TestLayouts(t *testing.T) {
	for _, l := range append([]Layout{LayoutNone}, Layouts...) {
		t.Run(string(l)+" → valid, explicit fields kept", func(t *testing.T) {
			p := Default()
			p.Selection.Layout = l
			ApplyLayout(p)
			if errs := ValidateRebalancerPolicy(p); len(errs) > 0 {
				t.Fatalf("layout %q gives an invalid policy: %v", l, errs.ToAggregate())
			}
			d := DefaultsOf(l)
			want := Selection{Layout: l, ClusterLabel: d.ClusterLabel, ShardSource: d.ShardSource, RoleLabel: d.RoleLabel, RecreatingOwners: d.RecreatingOwners,
				WorkloadSelector: metav1.LabelSelector{MatchLabels: d.WorkloadLabels}}
			if want.ClusterLabel == "" {
				want.ClusterLabel = DefaultClusterLabel
			}
			if want.ShardSource == "" {
				want.ShardSource = DefaultShardSource
			}
			if diff := cmp.Diff(want, p.Selection); diff != "" {
				t.Errorf("selection (-want +got):\n%s", diff)
			}
			explicit := Default()
			explicit.Selection = Selection{Layout: l, ClusterLabel: "mine", ShardSource: "label:shard", RoleLabel: "role", RecreatingOwners: []string{"Mine"},
				WorkloadSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "mine"}}}
			explicit.Redis.PasswordSecretRef.Key = "pw"
			keep := explicit.DeepCopy()
			ApplyLayout(explicit)
			keep.Redis.UsernameSecretRef.Key = explicit.Redis.UsernameSecretRef.Key
			if diff := cmp.Diff(keep, explicit); diff != "" {
				t.Errorf("explicit fields changed (-want +got):\n%s", diff)
			}
		})
	}
}
