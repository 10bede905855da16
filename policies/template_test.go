package policies_test

import (
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestTemplateLazy proves that Build keeps no re-creation template as a pod, and that
// Member.Template, built on first call from the pod and its StatefulSet, equals the template Build
// built and kept for every member before (cmp.Diff against that construction), with the spec
// Build converted it into reading the very labels map it carries: a plain StatefulSet per shard,
// the same after a rollout the pods have not caught up with (requests defaulted to limits) while
// some have (their own containers) and the template gained a volume, one with per-member claims
// on zonal PersistentVolumes, and Bitnami's single StatefulSet.
func TestTemplateLazy(t *testing.T) {
	placed := [][]string{{"n1", "n3", "n5"}, {"n3", "n5", "n1"}, {"n5", "n1", "n3"}}
	plain := scenario.Scenario{Name: "plain", Zones: scenario.ThreeZones(), Shards: 3, PodsPerShard: 3, RoleLabels: true}
	claims := plain
	claims.Claims = &scenario.ClaimTemplate{}
	bitnami := scenario.Scenario{Name: "bitnami", Layout: scenario.LayoutBitnami, Zones: scenario.ThreeZones(), Shards: 3, PodsPerShard: 2,
		Claims: &scenario.ClaimTemplate{}}
	for _, tc := range []struct {
		name   string
		sc     scenario.Scenario
		byNode [][]string
		change func(*policies.Snapshot)
	}{
		{name: "plain StatefulSet per shard → every member's Template as built eagerly", sc: plain, byNode: placed},
		{
			name: "rollout half done, template gained a volume → each member's Template as built eagerly", sc: plain, byNode: placed,
			change: func(snap *policies.Snapshot) {
				for _, sts := range snap.StatefulSets {
					sts.Status.UpdateRevision = "rev-2"
					c := &sts.Spec.Template.Spec.Containers[0]
					c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
					sts.Spec.Template.Spec.Volumes = append(sts.Spec.Template.Spec.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
				}
				for _, p := range snap.Pods {
					if rev := "rev-1"; strings.HasSuffix(p.Name, "-0") {
						p.Labels["controller-revision-hash"] = rev
					} else {
						p.Labels["controller-revision-hash"] = "rev-2"
					}
				}
			},
		},
		{name: "per-member claims on zonal PersistentVolumes → every member's Template as built eagerly", sc: claims, byNode: placed},
		{name: "Bitnami's single StatefulSet with claims → every member's Template as built eagerly", sc: bitnami, byNode: [][]string{{"n1", "n3"}, {"n5", "n2"}, {"n4", "n6"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.sc.Placed(tc.byNode).MustSnapshot()
			if tc.change != nil {
				tc.change(snap)
			}
			m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Clusters) != 1 || len(m.Clusters[0].Members) != tc.sc.N() {
				t.Fatalf("got %d clusters, want 1 of %d members", len(m.Clusters), tc.sc.N())
			}
			c := m.Clusters[0]
			if n := c.TemplatesBuilt(); n != 0 {
				t.Errorf("Build kept %d templates as pods, want 0", n)
			}
			for _, bad := range c.TemplateMismatches() {
				t.Error(bad)
			}
			if n := c.TemplatesBuilt(); n != len(c.Members) {
				t.Errorf("%d templates built after every member's Template call, want %d", n, len(c.Members))
			}
		})
	}
}

// TestTemplateConcurrent proves Member.Template safe for concurrent use (run with -race): plans
// of clusters run in parallel goroutines, and two of them may ask for one member's template; every
// caller gets the same pod.
func TestTemplateConcurrent(t *testing.T) {
	sc := scenario.Scenario{Name: "plain", Zones: scenario.ThreeZones(), Shards: 3, PodsPerShard: 2}.
		Placed([][]string{{"n1", "n3"}, {"n3", "n5"}, {"n5", "n1"}})
	m, err := policies.Build(sc.MustSnapshot(), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	const callers = 4
	got := make([][]*corev1.Pod, callers)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, mem := range c.Members {
				got[g] = append(got[g], mem.Template())
			}
		}()
	}
	wg.Wait()
	for i, mem := range c.Members {
		for g := range callers {
			if got[g][i] != mem.Template() {
				t.Errorf("%s: caller %d got another pod than Template returns now", mem.Key(), g)
			}
		}
	}
}
