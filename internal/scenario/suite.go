package scenario

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Case is one scenario of the suite behind examples/: a scenario plus the changes to its objects
// that the builders do not express (taints, cordons, extra constraint fields, volumes).
type Case struct {
	Scenario
	// Tweak, when set, changes the built snapshot.
	Tweak func(*policies.Snapshot)
}

// Snapshot builds the case's snapshot.
func (c Case) Snapshot() (*policies.Snapshot, error) {
	snap, err := c.Scenario.Snapshot()
	if err != nil {
		return nil, err
	}
	if c.Tweak != nil {
		c.Tweak(snap)
	}
	return snap, nil
}

// Suite returns the scenario suite, one case per file in examples/ (named after Scenario.Name).
// Every case labels pods with RoleLabel (ordinal 0 master) so that plans mark failovers offline.
func Suite() []Case {
	cases := []Case{
		{Scenario: SeedDeadlock()},
		{Scenario: PostScaleDown()},
		{Scenario: SingleZone()},
		{Scenario: TwoZones()},
		NodeReadded(),
		TooFewNodes(),
		TaintedAndCordoned(),
		MinDomains(),
		ExcludedZone(),
		{Scenario: ThreePodsPerShard()},
		ZonalVolumes(),
	}
	for i := range cases {
		cases[i].RoleLabels = true
	}
	return cases
}

// SingleZone: one zone of 6 nodes, 3 shards × 2 pods (N = 6, at most 1 pod per node); n1 holds
// two masters while n6 is empty.
func SingleZone() Scenario {
	s := Scenario{
		Name:        "single-zone",
		Description: "One zone, 6 nodes, 3 shards x 2 pods (N=6): n1 holds 2 masters, n6 none.",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2", "n3", "n4", "n5", "n6"}}}, Shards: 3, PodsPerShard: 2,
	}
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(1, 0): "n1", s.PodName(2, 0): "n2",
		s.PodName(0, 1): "n3", s.PodName(1, 1): "n4", s.PodName(2, 1): "n5",
	}
	return s
}

// TwoZones: zones a (n1–n3) and b (n4–n6), 4 shards × 2 pods (N = 8, at most 2 pods per node);
// n1 holds 3 pods. Shards keep one pod per zone, so the fix moves a pod inside zone a.
func TwoZones() Scenario {
	s := Scenario{
		Name:        "two-zones",
		Description: "Two zones of 3 nodes, 4 shards x 2 pods (N=8): n1 holds 3 pods; the fix stays inside zone-a.",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2", "n3"}}, {"zone-b", []string{"n4", "n5", "n6"}}},
		Shards:      4, PodsPerShard: 2,
	}
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(1, 0): "n1", s.PodName(2, 1): "n1", s.PodName(3, 0): "n2",
		s.PodName(0, 1): "n4", s.PodName(1, 1): "n5", s.PodName(2, 0): "n6", s.PodName(3, 1): "n6",
	}
	return s
}

// NodeReadded: n6 failed and came back empty; meanwhile shard 2's master was re-created on n1,
// which now holds 2 pods against a global minimum of 0.
func NodeReadded() Case {
	s := Scenario{
		Name:        "node-readded",
		Description: "n6 was removed and re-added empty; its pod was re-created on n1, which now holds 2 pods (N=6).",
		Zones:       ThreeZones(), Shards: 3, PodsPerShard: 2,
	}
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(2, 0): "n1", s.PodName(1, 1): "n2",
		s.PodName(2, 1): "n3", s.PodName(1, 0): "n4", s.PodName(0, 1): "n5",
	}
	return Case{Scenario: s}
}

// TooFewNodes: 3 shards × 2 pods (N = 6, at most 1 pod per node) on 5 nodes: no placement can
// comply (seed 000 §四: "fewer than 6 nodes").
func TooFewNodes() Case {
	s := Scenario{
		Name:        "too-few-nodes",
		Description: "N=6 on 5 nodes: MaxPodsPerNode cannot hold (seed 000 §四); the plan says why instead of moving pods.",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2"}}, {"zone-b", []string{"n3", "n4"}}, {"zone-c", []string{"n5"}}},
		Shards:      3, PodsPerShard: 2,
	}
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(1, 1): "n1", s.PodName(2, 1): "n2",
		s.PodName(1, 0): "n3", s.PodName(0, 1): "n4", s.PodName(2, 0): "n5",
	}
	return Case{Scenario: s}
}

// TaintedAndCordoned is PostScaleDown with n6 cordoned and n4 tainted dedicated=batch:NoSchedule
// (its pods keep running there): the pod that leaves n1 can only go to n5.
func TaintedAndCordoned() Case {
	s := PostScaleDown()
	s.Name = "tainted-and-cordoned"
	s.Description = "Post-scale-down with n6 cordoned and n4 tainted NoSchedule: the move from n1 can only land on n5."
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		for _, n := range snap.Nodes {
			switch n.Name {
			case "n6":
				n.Spec.Unschedulable = true
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
			case "n4":
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule})
			}
		}
	}}
}

// MinDomains: one zone of 6 nodes where n6 is cordoned; the hostname constraint asks for
// minDomains 6 and honours taints, so only 5 domains are eligible and the global minimum is 0:
// n1's 2 pods break the constraint, and 6 pods at most 1 per node cannot fit 5 nodes.
func MinDomains() Case {
	s := SingleZone()
	s.Name = "min-domains"
	s.Description = "minDomains 6 with n6 cordoned (nodeTaintsPolicy Honor): 5 eligible domains, global minimum 0, no plan fits."
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(1, 0): "n1", s.PodName(2, 0): "n2",
		s.PodName(0, 1): "n3", s.PodName(1, 1): "n4", s.PodName(2, 1): "n5",
	}
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		for _, n := range snap.Nodes {
			if n.Name == "n6" {
				n.Spec.Unschedulable = true
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
			}
		}
		set := func(spec *corev1.PodSpec) {
			for i := range spec.TopologySpreadConstraints {
				c := &spec.TopologySpreadConstraints[i]
				if c.WhenUnsatisfiable == corev1.DoNotSchedule && c.TopologyKey == corev1.LabelHostname {
					c.MinDomains = ptr.To[int32](6)
					c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
				}
			}
		}
		for _, s := range snap.StatefulSets {
			set(&s.Spec.Template.Spec)
		}
		for _, p := range snap.Pods {
			set(&p.Spec)
		}
	}}
}

// ExcludedZone: 4 zones with nodes, the cluster allowed in 3 (a, b, c); zone d's nodes are empty.
// With nodeAffinityPolicy Honor (the default) zone d is not an eligible domain, so the zone
// constraint holds: nothing to do.
func ExcludedZone() Case {
	s := Scenario{
		Name:        "excluded-zone",
		Description: "Zone-d has empty nodes but is not an allowed zone: with nodeAffinityPolicy Honor it is no domain, and the cluster complies.",
		Zones: []Zone{{"zone-a", []string{"n1", "n2"}}, {"zone-b", []string{"n3", "n4"}}, {"zone-c", []string{"n5", "n6"}},
			{"zone-d", []string{"n7", "n8"}}},
		Shards: 4, PodsPerShard: 2,
	}
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(1, 0): "n3", s.PodName(2, 0): "n5", s.PodName(3, 0): "n2",
		s.PodName(0, 1): "n4", s.PodName(1, 1): "n6", s.PodName(2, 1): "n1", s.PodName(3, 1): "n6",
	}
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		// The operator lists the three zones it may use (seed available-zones).
		allowed := []string{"zone-a", "zone-b", "zone-c"}
		set := func(spec *corev1.PodSpec) {
			terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			terms[0].MatchExpressions[0].Values = allowed
			for i := range spec.TopologySpreadConstraints {
				c := &spec.TopologySpreadConstraints[i]
				if c.WhenUnsatisfiable == corev1.DoNotSchedule && c.TopologyKey == corev1.LabelTopologyZone {
					c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
				}
			}
		}
		for _, s := range snap.StatefulSets {
			set(&s.Spec.Template.Spec)
		}
		for _, p := range snap.Pods {
			set(&p.Spec)
		}
	}}
}

// ThreePodsPerShard: 3 zones × 3 nodes, 3 shards × 3 pods (N = 9, at most 2 per node); the three
// masters share n1. Each shard has one pod per zone, so the fix stays inside zone a.
func ThreePodsPerShard() Scenario {
	s := Scenario{
		Name:        "three-pods-per-shard",
		Description: "3 shards x 3 pods (N=9) on 3 zones x 3 nodes: the three masters share n1.",
		Zones: []Zone{{"zone-a", []string{"n1", "n2", "n3"}}, {"zone-b", []string{"n4", "n5", "n6"}},
			{"zone-c", []string{"n7", "n8", "n9"}}},
		Shards: 3, PodsPerShard: 3,
	}
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(1, 0): "n1", s.PodName(2, 0): "n1",
		s.PodName(0, 1): "n4", s.PodName(1, 1): "n5", s.PodName(2, 1): "n6",
		s.PodName(0, 2): "n7", s.PodName(1, 2): "n8", s.PodName(2, 2): "n9",
	}
	return s
}

// ZonalVolumes: N = 10 on 3 zones; zone a holds 5 pods, two of them replicas; every pod's data
// is on a PersistentVolume pinned to its zone. Pods can only move inside their zone, which does
// not fix MaxPodsPerZone, unless a replica's claim may be released (policy option): then one
// replica moves to zone c.
func ZonalVolumes() Case {
	s := Scenario{
		Name:        "zonal-volumes",
		Description: "Zone-a holds 5 of 10 pods on zonal PersistentVolumes: no plan by default; with replica claims releasable, one replica moves.",
		Zones:       ThreeZones(), Shards: 5, PodsPerShard: 2,
	}
	s.Placement = map[string]string{
		s.PodName(0, 0): "n1", s.PodName(1, 0): "n1", s.PodName(2, 1): "n1", s.PodName(3, 1): "n1",
		s.PodName(4, 0): "n2",
		s.PodName(0, 1): "n3", s.PodName(1, 1): "n3",
		s.PodName(2, 0): "n4", s.PodName(3, 0): "n4",
		s.PodName(4, 1): "n5",
	}
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		zoneOf := map[string]string{}
		for _, n := range snap.Nodes {
			zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
		}
		for _, p := range snap.Pods {
			claim := "data-" + p.Name
			pv := "pv-" + p.Namespace + "-" + p.Name
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}})
			snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
				ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: p.Namespace},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
					VolumeName:  pv,
				},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
			})
			snap.PersistentVolumes = append(snap.PersistentVolumes, &corev1.PersistentVolume{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
				ObjectMeta: metav1.ObjectMeta{Name: pv},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					ClaimRef:    &corev1.ObjectReference{Namespace: p.Namespace, Name: claim},
					NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zoneOf[p.Spec.NodeName]}}},
					}}}},
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
			})
		}
	}}
}
