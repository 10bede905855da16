package policies_test

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// benchSnapshot returns 5,000 nodes in 3 zones and clusters Redis clusters of 30 shards × 2 pods
// built as the operator builds them, placed compliantly (shard s on zones (s, s+1) mod 3, each
// pod on its own node), in 20 namespaces.
func benchSnapshot(clusters int) *policies.Snapshot {
	const nodesPerZone = 5000 / 3
	zones := []string{"a", "b", "c"}
	var nodes []*corev1.Node
	for z, name := range zones {
		for k := 0; k < nodesPerZone; k++ {
			nodes = append(nodes, fixture.Node(fmt.Sprintf("z%d-%04d", z, k), fixture.InZone("zone-"+name)))
		}
	}
	var rcs []redisCluster
	next := make([]int, len(zones))
	for c := 0; c < clusters; c++ {
		rc := redisCluster{name: fmt.Sprintf("rc-%04d", c), shards: 30, perShard: 2, zones: zones, roles: true}
		for s := 0; s < rc.shards; s++ {
			var pl []string
			for o := 0; o < 2; o++ {
				z := (s + o) % 3
				pl = append(pl, fmt.Sprintf("z%d-%04d", z, next[z]%nodesPerZone))
				next[z]++
			}
			rc.place = append(rc.place, pl)
		}
		rcs = append(rcs, rc)
	}
	snap := snapshotOf(nodes, rcs)
	for i, p := range snap.Pods {
		p.Namespace = fmt.Sprintf("ns-%02d", i/60%20)
	}
	// StatefulSets share the namespace of their pods.
	byName := map[string]string{}
	for _, p := range snap.Pods {
		byName[p.OwnerReferences[0].Name] = p.Namespace
	}
	for _, s := range snap.StatefulSets {
		s.Namespace = byName[s.Name]
	}
	return snap
}

// BenchmarkBuildEvaluate measures Build plus Evaluate of every cluster's current placement on
// 5,000 nodes and 1,000 clusters of 60 pods (60,000 Redis pods), as one `check` run does.
func BenchmarkBuildEvaluate(b *testing.B) {
	snap := benchSnapshot(1000)
	opts := policies.Options{RoleLabel: scenario.RoleLabel}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		// Like one `check` run: the previous model is collected off the clock.
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		m, err := policies.Build(snap, opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range m.Clusters {
			c.Evaluate(c.Current())
		}
	}
}

// BenchmarkCandidates measures the filter for one evicted member on 5,000 nodes.
func BenchmarkCandidates(b *testing.B) {
	benchCandidates(b, benchSnapshot(50))
}

// BenchmarkEvaluate measures the rules on one cluster of 60 pods.
func BenchmarkEvaluate(b *testing.B) {
	m, err := policies.Build(benchSnapshot(50), policies.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c := m.Clusters[0]
	p := c.Current()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.Evaluate(p)
	}
}

// BenchmarkCandidatesChartRequests is BenchmarkCandidates with what a chart's pods bring to the
// filter beyond CPU and memory: every pod requests ephemeral storage (the Bitnami chart's 50Mi)
// and mounts a claim of a CSI volume, and every node reports ephemeral storage and a CSINode
// with an attach limit (NodeResourcesFit's third resource, NodeVolumeLimits).
func BenchmarkCandidatesChartRequests(b *testing.B) {
	snap := benchSnapshot(50)
	for _, n := range snap.Nodes {
		fixture.WithAllocatable("ephemeral-storage=100Gi")(n)
		snap.CSINodes = append(snap.CSINodes, fixture.CSINode(n.Name, "ebs.csi.aws.com=25"))
	}
	for _, s := range snap.StatefulSets {
		s.Spec.Template.Spec.Containers[0].Resources = fixture.ResourceRequirements("cpu=100m", "memory=128Mi", "ephemeral-storage=50Mi")
	}
	for _, p := range snap.Pods {
		p.Spec.Containers[0].Resources = fixture.ResourceRequirements("cpu=100m", "memory=128Mi", "ephemeral-storage=50Mi")
		claim := "data-" + p.Name
		pvc, pv := fixture.CSIClaim(p.Namespace, claim, "pv-"+claim, "ebs.csi.aws.com", corev1.ReadWriteOnce)
		snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, pvc)
		snap.PersistentVolumes = append(snap.PersistentVolumes, pv)
		fixture.WithNamedClaim("data", claim)(p)
	}
	benchCandidates(b, snap)
}

// benchCandidates measures the filter for the first member of snap's first Redis cluster, evicted.
func benchCandidates(b *testing.B, snap *policies.Snapshot) {
	m, err := policies.Build(snap, policies.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c := m.Clusters[0]
	p := c.Current()
	p[0] = -1
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if len(c.Candidates(p, 0)) == 0 {
			b.Fatal("no candidate")
		}
	}
}
