package plan

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestHeldNamesTheBindingConstraint checks what a plan says when no plan exists, on the Bitnami
// chart's post-scale-down drift with its default requests (ephemeral-storage 50Mi) and zonal
// volumes, zone-a's second node n2 without ephemeral room for one more pod: each pod of n1,
// evicted now, fits n1 only, n2 for lack of ephemeral storage and the other zones for their
// zonal PersistentVolumes; the plan names both reasons, with the flag and the room that would
// lift them, and still makes Redis safer with failovers alone.
func TestHeldNamesTheBindingConstraint(t *testing.T) {
	snap, _, err := observe.LoadSnapshotFile("../../examples/bitnami-zonal-post-scale-down.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snap.Nodes {
		if n.Name == "n2" {
			n.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("60Mi") // 50Mi used by redis-cluster-4
		}
	}
	m, err := policies.Build(snap, policies.Options{ClusterLabel: scenario.BitnamiZonalPostScaleDown().ClusterLabel()})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := observe.LoadRedisNodes("../../examples/redis-nodes/bitnami_redis-cluster.txt")
	if err != nil {
		t.Fatal(err)
	}
	if unused := observe.ApplyRedisNodes(m, nodes); len(unused) > 0 {
		t.Fatalf("Redis nodes not applied: %v", unused)
	}
	c := m.Clusters[0]
	p := Compute(c, Options{})
	if p.Infeasible == "" || p.Partial == nil || p.Partial.QuorumAfter != 0 {
		t.Fatalf("infeasible %q, partial %+v: want no plan, and failovers that make MasterQuorum hold", p.Infeasible, p.Partial)
	}
	var onN1 []string
	for _, h := range p.Held {
		if h.Node != "n1" {
			continue
		}
		onN1 = append(onN1, h.Pod)
		if !slices.Contains(h.Domains, "node n1") || !slices.Contains(h.Domains, "zone zone-a") {
			t.Errorf("%s held in %v, want node n1 and zone zone-a", h.Pod, h.Domains)
		}
		for _, want := range []string{"Insufficient ephemeral-storage [n2]", "didn't match PersistentVolume's node affinity [n3 n4 n5 n6]"} {
			if !strings.Contains(h.Why, want) {
				t.Errorf("%s: why %q lacks %q", h.Pod, h.Why, want)
			}
		}
		fix := strings.Join(h.Fix, "; ")
		for _, want := range []string{"--release-replica-claims", "room on n2 (ephemeral-storage)"} {
			if !strings.Contains(fix, want) {
				t.Errorf("%s: fix %q lacks %q", h.Pod, fix, want)
			}
		}
	}
	if len(onN1) != 4 {
		t.Errorf("held on n1: %v, want its 4 pods", onN1)
	}
}

// TestMastersOnlySaysSo checks that a cluster whose every pod is a master without a replica says
// so when no plan exists, instead of how many placements it searched: no eviction is a step when
// no master has a replica to hand its slots to.
func TestMastersOnlySaysSo(t *testing.T) {
	sc := scenario.Scenario{Name: "masters-only", Zones: scenario.ThreeZones(), Shards: 6, PodsPerShard: 1, RoleLabels: true}.
		Placed([][]string{{"n1"}, {"n1"}, {"n1"}, {"n2"}, {"n3"}, {"n4"}})
	m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	p := Compute(m.Clusters[0], Options{})
	if want := "every pod that may be evicted is a master serving slots with no replica to fail over to (6 masters"; !strings.Contains(p.Infeasible, want) || p.LimitedBy != LimitStatic {
		t.Errorf("infeasible %q (limited by %s), want %q…, static", p.Infeasible, p.LimitedBy, want)
	}
}
