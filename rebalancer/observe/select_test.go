package observe

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// twoClusters returns a snapshot with Redis clusters redis/redis (post-scale-down) and
// cache/sessions (the 3-shard deadlock, on the same nodes).
func twoClusters(t *testing.T) *policies.Snapshot {
	t.Helper()
	a := scenario.PostScaleDown().MustSnapshot()
	sc := scenario.SeedDeadlock()
	sc.Namespace, sc.Cluster = "cache", "sessions"
	b := sc.MustSnapshot()
	a.Pods = append(a.Pods, b.Pods...)
	a.StatefulSets = append(a.StatefulSets, b.StatefulSets...)
	a.PodDisruptionBudgets = append(a.PodDisruptionBudgets, b.PodDisruptionBudgets...)
	return a
}

func TestSelection(t *testing.T) {
	snap := twoClusters(t)
	for _, tc := range []struct {
		name string
		sel  Selection
		want []string
	}{
		{name: "zero selection → every cluster", want: []string{"cache/sessions", "redis/redis"}},
		{name: "namespace cache → its cluster only", sel: Selection{Namespace: "cache"}, want: []string{"cache/sessions"}},
		{name: "include cache and other → its cluster only", sel: Selection{IncludeNamespaces: []string{"other", "cache"}}, want: []string{"cache/sessions"}},
		{name: "exclude cache → the other cluster", sel: Selection{ExcludeNamespaces: []string{"cache"}}, want: []string{"redis/redis"}},
		{name: "empty selector → every cluster", sel: Selection{Selector: labels.Everything()}, want: []string{"cache/sessions", "redis/redis"}},
		{name: "selector on the cluster label → that cluster", sel: Selection{Selector: labels.SelectorFromSet(labels.Set{policies.DefaultClusterLabel: "redis"})}, want: []string{"redis/redis"}},
		{name: "selector on one pod's name → its cluster", sel: Selection{Selector: labels.SelectorFromSet(labels.Set{policies.StatefulSetPodNameLabel: "sessions-s1-1"})}, want: []string{"cache/sessions"}},
		{name: "namespace and selector disagree → none", sel: Selection{Namespace: "redis", Selector: labels.SelectorFromSet(labels.Set{policies.DefaultClusterLabel: "sessions"})}},
		{name: "selector matching no pod → none", sel: Selection{Selector: labels.SelectorFromSet(labels.Set{"app": "nothing"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Model(snap, policies.Options{}, tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range m.Clusters {
				got = append(got, c.Key())
				if !tc.sel.Matches(c) {
					t.Errorf("Model kept %s, which Matches rejects", c.Key())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}
