package policies_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestNodeLeaving covers which nodes the model marks as being emptied (Node.Leaving): cordoned, or
// tainted with one of Options.DrainTaints (the policy's guard.drainTaints; its defaults when nil),
// whatever the taint's effect; other taints do not count.
func TestNodeLeaving(t *testing.T) {
	taint := func(key string, effect corev1.TaintEffect) fixture.NodeOption {
		return fixture.Tainted(key, "", effect)
	}
	for _, tc := range []struct {
		name        string
		opts        map[string]fixture.NodeOption
		drainTaints []string
		want        map[string]string // node → Leaving ("" omitted)
	}{
		{name: "nothing → no node leaving", want: map[string]string{}},
		{
			name: "cordoned, and each default drain taint → leaving, each says why",
			opts: map[string]fixture.NodeOption{
				"n1": fixture.Cordoned(), "n2": taint("ToBeDeletedByClusterAutoscaler", corev1.TaintEffectNoSchedule),
				"n3": taint("karpenter.sh/disrupted", corev1.TaintEffectNoSchedule), "n4": taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
			},
			want: map[string]string{"n1": "cordoned", "n2": "taint ToBeDeletedByClusterAutoscaler", "n3": "taint karpenter.sh/disrupted", "n4": "taint node.kubernetes.io/unschedulable"},
		},
		{
			name: "a taint that is no drain taint, and a drain taint with effect PreferNoSchedule → only the drain taint counts",
			opts: map[string]fixture.NodeOption{"n1": taint("dedicated", corev1.TaintEffectNoSchedule), "n2": taint("ToBeDeletedByClusterAutoscaler", corev1.TaintEffectPreferNoSchedule)},
			want: map[string]string{"n2": "taint ToBeDeletedByClusterAutoscaler"},
		},
		{
			name:        "the policy's own drain taints replace the defaults; a cordon always counts",
			opts:        map[string]fixture.NodeOption{"n1": taint("example.com/draining", corev1.TaintEffectNoSchedule), "n2": taint("karpenter.sh/disrupted", corev1.TaintEffectNoSchedule), "n3": fixture.Cordoned()},
			drainTaints: []string{"example.com/draining"},
			want:        map[string]string{"n1": "taint example.com/draining", "n3": "cordoned"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := scenario.RoleOnly().MustSnapshot()
			for _, n := range snap.Nodes {
				if o := tc.opts[n.Name]; o != nil {
					o(n)
				}
			}
			m, err := policies.Build(snap, policies.Options{DrainTaints: tc.drainTaints})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, n := range m.Nodes {
				if n.Leaving != "" {
					got[n.Name] = n.Leaving
				}
				if leaving, why := policies.NodeLeaving(n.Obj, m.Options.DrainTaints); leaving != (n.Leaving != "") || why != n.Leaving {
					t.Errorf("NodeLeaving(%s) = %v, %q; the model says %q", n.Name, leaving, why, n.Leaving)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes leaving (-want +got):\n%s", diff)
			}
		})
	}
}
