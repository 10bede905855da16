package policies_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// TestSpreadCountMatchesReference compares the spread-constraint counts made before any search
// (StaticInfeasibility's TopologySpread part) with their reference form (infeasible_ref_test.go:
// every node visited for every member, counts in maps) on random placements: owned and unowned
// pods, Pending and terminating ones, pods pinned by a node selector or by zonal volumes, pods of
// other workloads counted by the selector, node capacity that runs out, minDomains, hostname and
// zone constraints; the Redis scenarios with zonal claims, with and without claim release; and the
// scale benchmark's synthetic snapshot, scaled down. Each reason must be the same, word for word,
// and at least some of the random cases must be infeasible (so that the reasons are compared,
// not only their absence).
func TestSpreadCountMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(20261128, 27))
	infeasible, compared := 0, 0
	check := func(t *testing.T, name string, m *policies.Model) {
		t.Helper()
		for _, c := range m.Clusters {
			got, want := c.SpreadCounts()
			compared++
			if len(want) > 0 {
				infeasible++
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s, cluster %s: spread counts differ from the reference (-want +got):\n%s", name, c.Key(), diff)
			}
		}
	}
	for i := range 600 {
		snap := randomSpreadSnapshot(r)
		m, err := policies.Build(snap, policies.Options{RecreatingOwners: []string{"ReplicaSet"}})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		check(t, fmt.Sprintf("random case %d", i), m)
	}
	checkZonalCases(t, r, 200, check)
	cfg := synth.Scaled(0.02)
	m, err := policies.Build(synth.Generate(cfg), policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "synthetic snapshot", m)
	t.Logf("%d clusters compared, %d of them infeasible by the counts", compared, infeasible)
	if infeasible < 20 {
		t.Errorf("only %d of %d clusters are infeasible by the counts: the random cases no longer reach the reasons", infeasible, compared)
	}
}

// randomSpreadSnapshot returns 2–9 nodes in up to 3 zones (some without a zone label, some with
// little room), and one cluster "tsc" of 3–14 pods carrying one or two DoNotSchedule constraints
// selecting foo=bar, with pods of another workload matching them.
func randomSpreadSnapshot(r *rand.Rand) *policies.Snapshot {
	pick := func(p float64) bool { return r.Float64() < p }
	zones := []string{"zone-a", "zone-b", "zone-c"}
	var nodes []*corev1.Node
	for i := range 2 + r.IntN(8) {
		var opts []fixture.NodeOption
		if pick(0.9) {
			opts = append(opts, fixture.InZone(zones[r.IntN(len(zones))]))
		}
		if pick(0.4) {
			opts = append(opts, fixture.Allocatable([]string{"500m", "1", "4"}[r.IntN(3)], "4Gi", int64(2+r.IntN(6))))
		}
		if pick(0.1) {
			opts = append(opts, fixture.Cordoned())
		}
		if pick(0.1) {
			opts = append(opts, fixture.Tainted("t", "x", corev1.TaintEffectNoSchedule))
		}
		nodes = append(nodes, fixture.Node(fmt.Sprintf("n%d", i+1), opts...))
	}
	var spread []fixture.PodOption
	for range 1 + r.IntN(2) {
		var sopts []fixture.SpreadOption
		if pick(0.2) {
			sopts = append(sopts, fixture.MinDomains(int32(1+r.IntN(4))))
		}
		if pick(0.2) {
			sopts = append(sopts, fixture.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor))
		}
		key := []string{corev1.LabelTopologyZone, corev1.LabelHostname}[r.IntN(2)]
		spread = append(spread, fixture.SpreadOn(key, int32(1+r.IntN(2)), map[string]string{"foo": "bar"}, sopts...))
	}
	snap := &policies.Snapshot{Nodes: nodes}
	node := func() string { return nodes[r.IntN(len(nodes))].Name }
	for i := range 3 + r.IntN(12) {
		opts := append([]fixture.PodOption{
			fixture.WithLabels("foo", "bar", policies.DefaultClusterLabel, "tsc"),
			fixture.Requests([]string{"100m", "250m", "500m"}[r.IntN(3)], "256Mi"),
		}, spread...)
		switch x := r.Float64(); {
		case x < 0.08:
			opts = append(opts, fixture.Unschedulable())
		case x < 0.14:
			opts = append(opts, fixture.On(node()), fixture.Terminating())
		default:
			opts = append(opts, fixture.On(node()))
		}
		if pick(0.85) {
			opts = append(opts, fixture.ControlledBy("apps/v1", "ReplicaSet", "rs"))
		}
		if pick(0.2) {
			opts = append(opts, fixture.NodeSelector(corev1.LabelTopologyZone, zones[r.IntN(len(zones))]))
		}
		if pick(0.15) {
			claim := fmt.Sprintf("data-%d", i)
			pvc, pv := fixture.BoundClaim(fixture.Namespace, claim, "pv-"+claim, corev1.LabelTopologyZone, zones[r.IntN(len(zones))])
			snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, pvc)
			snap.PersistentVolumes = append(snap.PersistentVolumes, pv)
			opts = append(opts, fixture.WithClaim(claim))
		}
		if pick(0.1) {
			opts = append(opts, fixture.Tolerates("t", corev1.TaintEffectNoSchedule))
		}
		snap.Pods = append(snap.Pods, fixture.Pod(fmt.Sprintf("pod-%d", i), opts...))
	}
	for i := range r.IntN(6) {
		snap.Pods = append(snap.Pods, fixture.Pod(fmt.Sprintf("other-%d", i), fixture.On(node()),
			fixture.WithLabels("foo", "bar"), fixture.ControlledBy("apps/v1", "ReplicaSet", "web"), fixture.Requests("500m", "512Mi")))
	}
	return snap
}

// randomZonalScenario returns a seed-layout Redis cluster of 2–4 shards × 2–3 pods on 3 zones ×
// 1–3 nodes with a zonal claim per pod, placed at random (some pods Pending), with claim release
// on or off.
func randomZonalScenario(r *rand.Rand) (scenario.Scenario, policies.Options) {
	perZone := 1 + r.IntN(3)
	sc := scenario.Scenario{
		Name: "zonal", Zones: scenario.ThreeZones(), Shards: 2 + r.IntN(3), PodsPerShard: 2 + r.IntN(2),
		RoleLabels: true, Claims: &scenario.ClaimTemplate{},
	}
	for z := range sc.Zones {
		sc.Zones[z].Nodes = sc.Zones[z].Nodes[:min(perZone, len(sc.Zones[z].Nodes))]
	}
	nodes := sc.NodeNames()
	var byShard [][]string
	for range sc.Shards {
		var row []string
		for range sc.PodsPerShard {
			n := ""
			if r.Float64() < 0.9 {
				n = nodes[r.IntN(len(nodes))]
			}
			row = append(row, n)
		}
		byShard = append(byShard, row)
	}
	return sc.Placed(byShard), policies.Options{RoleLabel: scenario.RoleLabel, ReleaseReplicaClaims: r.IntN(2) == 0}
}

// TestExplainSummaryMatchesExplain compares ExplainSummary, which keeps only the node names the
// summary shows, with Explain(p, i).Summary() and len(Fits) for every member of random clusters
// (nodes that run out of room, pinned and Pending pods: many reasons, some with more than ten
// nodes) and of the scale benchmark's synthetic snapshot, scaled down, each with its pods
// unplaced one at a time.
func TestExplainSummaryMatchesExplain(t *testing.T) {
	r := rand.New(rand.NewPCG(20261128, 28))
	compared := 0
	check := func(t *testing.T, name string, m *policies.Model) {
		t.Helper()
		for _, c := range m.Clusters {
			p := c.Current()
			for i := range c.Members {
				q := append(policies.Placement(nil), p...)
				q[i] = -1
				rep := c.Explain(q, i)
				got, fits := c.ExplainSummary(q, i)
				compared++
				if want := rep.Summary(); got != want || fits != len(rep.Fits) {
					t.Fatalf("%s, cluster %s, member %d: ExplainSummary = %q, %d fits; want %q, %d", name, c.Key(), i, got, fits, want, len(rep.Fits))
				}
			}
		}
	}
	for i := range 100 {
		m, err := policies.Build(randomSpreadSnapshot(r), policies.Options{RecreatingOwners: []string{"ReplicaSet"}})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		check(t, fmt.Sprintf("random case %d", i), m)
	}
	m, err := policies.Build(synth.Generate(synth.Scaled(0.02)), policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "synthetic snapshot", m)
	t.Logf("%d members compared", compared)
}

// TestExtAntiMatchesAgainst checks that every member spec's extAnti (the domains where another
// pod's required anti-affinity term matches it; derived specs reuse the spec they derive from when
// their labels agree on the keys those terms read) equals what antiIndex.against computes for its
// pod: on the scale benchmark's synthetic snapshot, scaled down (StatefulSet templates that differ
// from their pods by role and pod-name labels, shard anti-affinity), and on zonal scenarios.
func TestExtAntiMatchesAgainst(t *testing.T) {
	r := rand.New(rand.NewPCG(20261128, 29))
	check := func(t *testing.T, name string, m *policies.Model) {
		t.Helper()
		for _, c := range m.Clusters {
			if bad := c.ExtAntiMismatches(); len(bad) > 0 {
				t.Fatalf("%s, cluster %s: %d specs differ, the first: %s", name, c.Key(), len(bad), bad[0])
			}
		}
	}
	// Pods of another app whose terms select the masters by their role label (which the templates
	// lack: a running master's spec cannot take its template's domains) and one shard by its
	// shard label (which pod and template share).
	snap := snapshotOf(fixture.ZonedNodes(2, "a", "b"), []redisCluster{{shards: 2, perShard: 2, roles: true, place: [][]string{{"n1", "n3"}, {"n2", "n4"}}}},
		fixture.Pod("guard-masters", fixture.On("n1"), fixture.AntiAffinity(policies.LabelHostname, map[string]string{scenario.RoleLabel: "master"})),
		fixture.Pod("guard-s0", fixture.On("n4"), fixture.AntiAffinity(corev1.LabelTopologyZone, map[string]string{scenario.ShardLabel: "redis-s0"})))
	m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "masters and a shard selected by other pods", m)
	if m, err = policies.Build(synth.Generate(synth.Scaled(0.05)), policies.Options{RoleLabel: scenario.RoleLabel}); err != nil {
		t.Fatal(err)
	}
	check(t, "synthetic snapshot", m)
	checkZonalCases(t, r, 100, check)
}

// checkZonalCases builds n random zonal scenarios (randomZonalScenario) and calls check on each
// model.
func checkZonalCases(t *testing.T, r *rand.Rand, n int, check func(t *testing.T, name string, m *policies.Model)) {
	t.Helper()
	for i := range n {
		sc, opts := randomZonalScenario(r)
		m, err := policies.Build(sc.MustSnapshot(), opts)
		if err != nil {
			t.Fatalf("zonal case %d: %v", i, err)
		}
		check(t, fmt.Sprintf("zonal case %d", i), m)
	}
}
