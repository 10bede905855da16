package policies_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestClaimRelease proves when a member's claims on zonal PersistentVolumes may be released
// (ClaimsReleasable, ReleasableClaims, ClaimsKept) and what the filter then allows: redis-s0-1,
// evicted, is re-created from its template on any node of zone-b or zone-c its shard allows when
// its claim "data-redis-s0-1" (bound to a PersistentVolume pinned to zone-b) may be released, and
// in zone-b only when it keeps it. 3 zones × 2 nodes, 2 shards × 2 pods: s0 on n1 (master) and
// n3, s1 on n5 (master) and n2; shard pods keep to distinct zones (required anti-affinity; the
// spread constraints are left out, so that the claims alone decide the zone).
func TestClaimRelease(t *testing.T) {
	const pod = "redis-s0-1"
	sc := scenario.Scenario{
		Name: "claims", Zones: scenario.ThreeZones(), Shards: 2, PodsPerShard: 2, RoleLabels: true,
		Claims: &scenario.ClaimTemplate{},
	}.Placed([][]string{{"n1", "n3"}, {"n5", "n2"}})
	podNamed := func(snap *policies.Snapshot, name string) *corev1.Pod {
		for _, p := range snap.Pods {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no pod %s", name)
		return nil
	}
	for _, tc := range []struct {
		name        string
		opts        policies.Options
		change      func(snap *policies.Snapshot)
		wantFits    []string
		wantClaims  []string
		wantKeptWhy string // a phrase of ClaimsKept
	}{
		{
			name:       "a replica, claims releasable → released: every node of zones b and c it fits",
			opts:       policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel},
			wantFits:   []string{"n3", "n4", "n5", "n6"},
			wantClaims: []string{"data-" + pod},
		},
		{
			name:       "a master serving slots, claims releasable → released after its failover: every node it fits",
			opts:       policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel},
			change:     func(snap *policies.Snapshot) { podNamed(snap, pod).Labels[scenario.RoleLabel] = "master" },
			wantFits:   []string{"n3", "n4", "n5", "n6"},
			wantClaims: []string{"data-" + pod},
		},
		{
			name:        "releasing claims off (the default) → kept: zone-b only",
			opts:        policies.Options{RoleLabel: scenario.RoleLabel},
			wantFits:    []string{"n3", "n4"},
			wantKeptWhy: "releasing claims is off",
		},
		{
			name:        "role unknown → kept: zone-b only",
			opts:        policies.Options{ReleaseReplicaClaims: true},
			wantFits:    []string{"n3", "n4"},
			wantKeptWhy: "its Redis role is unknown",
		},
		{
			name: "a claim no volumeClaimTemplate re-creates → kept: zone-b only",
			opts: policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel},
			change: func(snap *policies.Snapshot) {
				for _, sts := range snap.StatefulSets {
					sts.Spec.VolumeClaimTemplates = nil
				}
			},
			wantFits:    []string{"n3", "n4"},
			wantKeptWhy: "claim data-redis-s0-1 is not one of StatefulSet redis-s0's volumeClaimTemplates",
		},
		{
			name: "a PersistentVolume without node affinity or zone labels → nothing restricts the pod: every node, no claim to release",
			opts: policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel},
			change: func(snap *policies.Snapshot) {
				for _, pv := range snap.PersistentVolumes {
					pv.Spec.NodeAffinity = nil
				}
			},
			wantFits: []string{"n3", "n4", "n5", "n6"},
		},
		{
			name: "a PersistentVolume labelled with its zone (VolumeZone), claims releasable → released",
			opts: policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel},
			change: func(snap *policies.Snapshot) {
				for _, pv := range snap.PersistentVolumes {
					if pv.Spec.ClaimRef.Name == "data-"+pod {
						pv.Spec.NodeAffinity = nil
						pv.Labels = map[string]string{corev1.LabelTopologyZone: "zone-b"}
					}
				}
			},
			wantFits:   []string{"n3", "n4", "n5", "n6"},
			wantClaims: []string{"data-" + pod},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := sc.MustSnapshot()
			withoutSpread(snap)
			if tc.change != nil {
				tc.change(snap)
			}
			m, err := policies.Build(snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			i := memberIndex(c, pod)
			p := c.Current()
			p[i] = -1 // evicted: re-created from its template
			if diff := cmp.Diff(tc.wantFits, nodeNames(m, c.Candidates(p, i))); diff != "" {
				t.Errorf("candidates (-want +got):\n%s\n%s", diff, c.Explain(p, i).Summary())
			}
			if diff := cmp.Diff(tc.wantClaims, c.ReleasableClaims(i)); diff != "" {
				t.Errorf("ReleasableClaims (-want +got):\n%s", diff)
			}
			if got := c.ClaimsReleasable(i); got != (tc.wantClaims != nil) {
				t.Errorf("ClaimsReleasable = %v, want %v", got, tc.wantClaims != nil)
			}
			why := c.ClaimsKept(i)
			if tc.wantKeptWhy == "" && why != "" || !strings.Contains(why, tc.wantKeptWhy) {
				t.Errorf("ClaimsKept = %q, want %q", why, tc.wantKeptWhy)
			}
			// VolumesAllow: the nodes of the volume's zone when one restricts, every node otherwise.
			var allowed []string
			for n, node := range m.Nodes {
				if c.VolumesAllow(i, n) {
					allowed = append(allowed, node.Name)
				}
			}
			wantAllowed := []string{"n3", "n4"}
			if tc.wantClaims == nil && tc.wantKeptWhy == "" {
				wantAllowed = sc.NodeNames()
			}
			if diff := cmp.Diff(wantAllowed, allowed); diff != "" {
				t.Errorf("VolumesAllow (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaimReleasePending proves that a Pending pod keeps its claims: the scheduler places the pod
// itself, with the claims it has (their release is a move's, after an eviction).
func TestClaimReleasePending(t *testing.T) {
	sc := scenario.Scenario{
		Name: "claims", Zones: scenario.ThreeZones(), Shards: 2, PodsPerShard: 2, RoleLabels: true,
		Claims: &scenario.ClaimTemplate{},
	}.Placed([][]string{{"n1", "n3"}, {"n5", "n2"}})
	snap := sc.MustSnapshot()
	withoutSpread(snap)
	for _, p := range snap.Pods {
		if p.Name == "redis-s0-1" { // its node lost: Pending again, its claim still bound in zone-b
			p.Spec.NodeName = ""
			fixture.Unschedulable()(p)
		}
	}
	m, err := policies.Build(snap, policies.Options{ReleaseReplicaClaims: true, RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	i := memberIndex(c, "redis-s0-1")
	if c.ClaimsReleasable(i) || !strings.Contains(c.ClaimsKept(i), "Pending pod") {
		t.Errorf("Pending pod: ClaimsReleasable %v, ClaimsKept %q; want false and why", c.ClaimsReleasable(i), c.ClaimsKept(i))
	}
	if diff := cmp.Diff([]string{"n3", "n4"}, nodeNames(m, c.Candidates(c.Current(), i))); diff != "" {
		t.Errorf("candidates of the Pending pod (-want +got):\n%s", diff)
	}
}

// withoutSpread removes the topology spread constraints of snap's pods and templates.
func withoutSpread(snap *policies.Snapshot) {
	for _, p := range snap.Pods {
		p.Spec.TopologySpreadConstraints = nil
	}
	for _, sts := range snap.StatefulSets {
		sts.Spec.Template.Spec.TopologySpreadConstraints = nil
	}
}
