package scenario

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// Case is one scenario of the suite behind examples/: a scenario plus the changes to its objects
// that the builders do not express (taints, cordons, extra constraint fields, volumes).
type Case struct {
	Scenario
	// Tweak, when set, changes the built snapshot.
	Tweak func(*policies.Snapshot)
	// Flags are the flags `plan` needs, beyond the snapshot and the roles, to show what the case
	// shows ("--best-effort"); the example's header names them.
	Flags []string
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
// Every case of the seed layout labels pods with RoleLabel (ordinal 0 master) so that plans mark
// failovers offline; the Bitnami and OT cases take roles and shards from their ClusterNodes
// (examples/redis-nodes/, --redis-nodes).
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
		StayersOnUnusableNodes(),
		{Scenario: PendingStep()},
		{Scenario: RoleOnly()},
		{Scenario: BitnamiPostScaleDown()},
		{Scenario: OTPostScaleDown()},
		{Scenario: BitnamiZonalPostScaleDown()},
		{Scenario: BitnamiExternalAccessPostScaleDown()},
		{Scenario: Rebalanced()},
		SoftSpread(),
		BestEffort(),
	}
	for i := range cases {
		cases[i].RoleLabels = cases[i].Layout == LayoutSeed
	}
	return cases
}

// SoftSpread: 5 shards × 2 pods (N = 10) on 3 zones × 2 nodes, every hard rule holding (at
// most 3 pods per node, 4 per zone, 2 masters per zone, one per node), but zones a, b and c hold
// 4, 4 and 2 pods where the templates' ScheduleAnyway zone constraint asks for a skew of 1: with
// SoftTopologySpread enabled and one soft eviction allowed, a pod of zone-a or zone-b moves to
// zone-c.
func SoftSpread() Case {
	s := Scenario{
		Name:        "soft-spread",
		Description: "5 shards x 2 pods (N=10), every hard rule holding, zones holding 4, 4 and 2 pods: the ScheduleAnyway zone constraint (skew 2 > 1) is soft; one soft eviction fixes it.",
		Zones:       ThreeZones(), Shards: 5, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n4", "n1"}, {"n4", "n2"}, {"n2", "n5"}, {"n6", "n3"},
	})
	return Case{Scenario: s, Flags: []string{"--enable-rules", "SoftTopologySpread", "--soft-evictions", "1"}}
}

// BestEffort: N = 6 on 5 nodes, as TooFewNodes, with every master on n1: no placement keeps
// fewer than N/3 pods per node (that needs 6 nodes), so there is no plan; with --best-effort,
// two evictions (and the failovers they need) leave one node above the limit instead of n1's
// two pods above it and zone-a's one above its own.
func BestEffort() Case {
	s := Scenario{
		Name:        "best-effort",
		Description: "N=6 on 5 nodes, n1 holding every master: no placement complies (fewer than N/3 per node needs 6 nodes); with --best-effort, 2 evictions leave the fewest violations.",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2"}}, {"zone-b", []string{"n3", "n4"}}, {"zone-c", []string{"n5"}}},
		Shards:      3, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n1", "n4"}, {"n1", "n5"},
	})
	return Case{Scenario: s, Flags: []string{"--best-effort"}}
}

// SingleZone: one zone of 6 nodes, 3 shards × 2 pods (N = 6, at most 1 pod per node); n1 holds
// two masters while n6 is empty.
func SingleZone() Scenario {
	return Scenario{
		Name:        "single-zone",
		Description: "One zone, 6 nodes, 3 shards x 2 pods (N=6): n1 holds 2 masters, n6 none.",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2", "n3", "n4", "n5", "n6"}}}, Shards: 3, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n1", "n4"}, {"n2", "n5"},
	})
}

// TwoZones: zones a (n1–n3) and b (n4–n6), 4 shards × 2 pods (N = 8, at most 2 pods per node);
// n1 holds 3 pods. Shards keep one pod per zone, so the fix moves a pod inside zone a.
func TwoZones() Scenario {
	return Scenario{
		Name:        "two-zones",
		Description: "Two zones of 3 nodes, 4 shards x 2 pods (N=8): n1 holds 3 pods; the fix stays inside zone-a.",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2", "n3"}}, {"zone-b", []string{"n4", "n5", "n6"}}},
		Shards:      4, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n4"}, {"n1", "n5"}, {"n6", "n1"}, {"n2", "n6"},
	})
}

// NodeReadded: n6 failed and came back empty; meanwhile shard 2's master was re-created on n1,
// which now holds 2 pods against a global minimum of 0.
func NodeReadded() Case {
	s := Scenario{
		Name:        "node-readded",
		Description: "n6 was removed and re-added empty; its pod was re-created on n1, which now holds 2 pods (N=6).",
		Zones:       ThreeZones(), Shards: 3, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n5"}, {"n4", "n2"}, {"n1", "n3"},
	})
	return Case{Scenario: s}
}

// TooFewNodes: 3 shards × 2 pods (N = 6, at most 1 pod per node) on 5 nodes: no placement can
// comply (with fewer than 6 nodes the 1/3 rule cannot hold at all).
func TooFewNodes() Case {
	s := Scenario{
		Name:        "too-few-nodes",
		Description: "N=6 on 5 nodes: MaxPodsPerNode cannot hold (fewer than 6 nodes); the plan says why instead of moving pods.",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2"}}, {"zone-b", []string{"n3", "n4"}}, {"zone-c", []string{"n5"}}},
		Shards:      3, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n4"}, {"n3", "n1"}, {"n5", "n2"},
	})
	return Case{Scenario: s}
}

// TaintedAndCordoned is PostScaleDown with n6 cordoned and n4 tainted dedicated=batch:NoSchedule
// (its pods keep running there): the pod that leaves n1 can only go to n5.
func TaintedAndCordoned() Case {
	s := PostScaleDown()
	s.Name = "tainted-and-cordoned"
	s.Description = "Post-scale-down with n6 cordoned and n4 tainted NoSchedule: the move from n1 can only land on n5."
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		changeNode(snap, "n6", fixture.Cordoned())
		changeNode(snap, "n4", fixture.Tainted("dedicated", "batch", corev1.TaintEffectNoSchedule))
	}}
}

// MinDomains is SingleZone with n6 cordoned; the hostname constraint asks for
// minDomains 6 and honours taints, so only 5 domains are eligible and the global minimum is 0:
// n1's 2 pods break the constraint, and 6 pods at most 1 per node cannot fit 5 nodes.
func MinDomains() Case {
	s := SingleZone()
	s.Name = "min-domains"
	s.Description = "minDomains 6 with n6 cordoned (nodeTaintsPolicy Honor): 5 eligible domains, global minimum 0, no plan fits."
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		changeNode(snap, "n6", fixture.Cordoned())
		changeSpread(snap, corev1.LabelHostname, fixture.MinDomains(6), fixture.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor))
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
	}.Placed([][]string{
		{"n1", "n4"}, {"n3", "n6"}, {"n5", "n1"}, {"n2", "n6"},
	})
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		// The operator lists the three zones it may use (required node affinity).
		allowed := []string{"zone-a", "zone-b", "zone-c"}
		changeSpecs(snap, func(spec *corev1.PodSpec) {
			terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			terms[0].MatchExpressions[0].Values = allowed
		})
		changeSpread(snap, corev1.LabelTopologyZone, fixture.NodeAffinityPolicy(corev1.NodeInclusionPolicyHonor))
	}}
}

// ThreePodsPerShard: 3 zones × 3 nodes, 3 shards × 3 pods (N = 9, at most 2 per node); the three
// masters share n1. Each shard has one pod per zone, so the fix stays inside zone a.
func ThreePodsPerShard() Scenario {
	return Scenario{
		Name:        "three-pods-per-shard",
		Description: "3 shards x 3 pods (N=9) on 3 zones x 3 nodes: the three masters share n1.",
		Zones: []Zone{{"zone-a", []string{"n1", "n2", "n3"}}, {"zone-b", []string{"n4", "n5", "n6"}},
			{"zone-c", []string{"n7", "n8", "n9"}}},
		Shards: 3, PodsPerShard: 3,
	}.Placed([][]string{
		{"n1", "n4", "n7"}, {"n1", "n5", "n8"}, {"n1", "n6", "n9"},
	})
}

// ZonalVolumes: N = 10 on 3 zones; zone a holds 5 pods, two of them replicas; every pod's data
// is on a PersistentVolume pinned to its zone (a volumeClaimTemplate per StatefulSet). Pods can
// only move inside their zone, which does not fix MaxPodsPerZone, unless their claims may be
// released (policy option): then one replica moves to zone c with its claim released (and a
// failover spreads the masters).
func ZonalVolumes() Case {
	s := Scenario{
		Name:        "zonal-volumes",
		Description: "Zone-a holds 5 of 10 pods on zonal PersistentVolumes: no plan by default; with claims releasable, one replica moves.",
		Zones:       ThreeZones(), Shards: 5, PodsPerShard: 2,
		Claims: &ClaimTemplate{Name: "data"},
	}.Placed([][]string{
		{"n1", "n3"}, {"n1", "n3"}, {"n4", "n1"}, {"n4", "n1"}, {"n2", "n5"},
	})
	return Case{Scenario: s}
}

// StayersOnUnusableNodes: 3 zones × 2 nodes, N = 6 (at most 1 pod per node); n6 is cordoned
// and n4 tainted dedicated=batch:NoSchedule (the templates do not tolerate it), and each still
// runs a pod that may stay there: only 4 nodes are usable, but with the 2 pods that stay the
// cluster fits. n1 holds two pods; the fix moves shard 1's replica to n5, the only node it fits.
func StayersOnUnusableNodes() Case {
	s := Scenario{
		Name:        "stayers-on-unusable-nodes",
		Description: "n6 cordoned and n4 tainted, each still running a pod that may stay: 4 usable nodes and 2 stayers fit N=6; n1's second pod moves to n5.",
		Zones:       ThreeZones(), Shards: 3, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n4", "n1"}, {"n6", "n2"},
	})
	return Case{Scenario: s, Tweak: func(snap *policies.Snapshot) {
		changeNode(snap, "n6", fixture.Cordoned())
		changeNode(snap, "n4", fixture.Tainted("dedicated", "batch", corev1.TaintEffectNoSchedule))
	}}
}

// PendingStep is the Pending-step case: N = 4 in two zones of three nodes (zone maxSkew 1),
// each shard's two pods in one zone. Every single eviction leaves its pod unplaceable (the other
// zone would hold 3 pods against 1), so there is no plan in which each evicted pod is placed at
// once; with one pod waiting Pending for a step, 2 evictions fix it.
func PendingStep() Scenario {
	return Scenario{
		Name:        "pending-step",
		Description: "N=4 in two zones of 3 nodes, each shard's pods in one zone: no single eviction can be re-placed; 2 evictions fix it if one pod waits Pending for a step (--allow-pending-steps).",
		Zones:       []Zone{{"zone-a", []string{"n1", "n2", "n3"}}, {"zone-b", []string{"n4", "n5", "n6"}}},
		Shards:      2, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n2"}, {"n4", "n5"},
	})
}

// RoleOnly is the role-only case: 5 shards × 2 pods (N = 10) on 3 zones × 2 nodes whose
// pods comply with every rule about pods, but n1 holds 3 of the 5 masters (and zone-a 3): losing
// n1 or zone-a would leave no majority of masters, so no replica would be promoted. One failover
// (no eviction) fixes it.
func RoleOnly() Scenario {
	return Scenario{
		Name:        "role-only",
		Description: "Pods comply with every rule, but n1 holds 3 of the 5 masters (MasterQuorum): one failover fixes it, no eviction.",
		Zones:       ThreeZones(), Shards: 5, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n1", "n5"}, {"n1", "n4"}, {"n3", "n6"}, {"n6", "n2"},
	})
}

// Rebalanced is a compliant 5 shards × 2 pods (N = 10) on 3 zones × 2 nodes, one master per node
// but n6 (zone-a and zone-b hold 2 masters each): the cluster a drain starts from. Draining n1
// hands s0's master to its replica on n3, which would leave n3 2 and zone-b 3 of the 5 masters:
// s1's master on n3 hands off to its replica on n5 first. Two failovers, no eviction.
func Rebalanced() Scenario {
	return Scenario{
		Name:        "rebalanced",
		Description: "Compliant, one master per node but n6: draining n1 takes 2 failovers (room in zone-b first, then n1's master).",
		Zones:       ThreeZones(), Shards: 5, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n3", "n5"}, {"n5", "n1"}, {"n2", "n4"}, {"n4", "n6"},
	})
}

// TwoMastersOnN1 is a compliant 5 shards × 2 pods (N = 10) on 3 zones × 2 nodes where n1 holds
// the most masters, 2 of the 5 (s0's and s1's, their replicas on n3 and n5): the node a drain
// hurts most. Handing n1's masters off for a drain takes 3 failovers: s0's to n3 would leave
// zone-b 3 of 5, so s3's master on n4 makes room first (to n2), and s1's goes to n5.
func TwoMastersOnN1() Scenario {
	return Scenario{
		Name:        "two-masters-on-n1",
		Description: "Compliant; n1 holds 2 of the 5 masters, the most of any node.",
		Zones:       ThreeZones(), Shards: 5, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n1", "n5"}, {"n3", "n6"}, {"n4", "n2"}, {"n6", "n2"},
	})
}

// changeNode applies opts to the snapshot's node name.
func changeNode(snap *policies.Snapshot, name string, opts ...fixture.NodeOption) {
	for _, n := range snap.Nodes {
		if n.Name == name {
			for _, o := range opts {
				o(n)
			}
		}
	}
}

// changeSpecs applies change to every pod spec of the snapshot: the StatefulSets' templates and
// the pods.
func changeSpecs(snap *policies.Snapshot, change func(*corev1.PodSpec)) {
	for _, s := range snap.StatefulSets {
		change(&s.Spec.Template.Spec)
	}
	for _, p := range snap.Pods {
		change(&p.Spec)
	}
}

// changeSpread applies opts to every hard (DoNotSchedule) topology spread constraint on key, in
// the StatefulSets' templates and the pods.
func changeSpread(snap *policies.Snapshot, key string, opts ...fixture.SpreadOption) {
	changeSpecs(snap, func(spec *corev1.PodSpec) {
		for i := range spec.TopologySpreadConstraints {
			c := &spec.TopologySpreadConstraints[i]
			if c.WhenUnsatisfiable == corev1.DoNotSchedule && c.TopologyKey == key {
				for _, o := range opts {
					o(c)
				}
			}
		}
	})
}
