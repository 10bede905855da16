package observe

import (
	"strings"
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

// TestCheckNamesUnselectedWorkloads: when pods carry the cluster label and the workload selector
// matches none of them, the error says so; pods Bitnami's chart made under an alias or
// nameOverride (helm.sh/chart redis-cluster-*, another app.kubernetes.io/name) are named with
// the --workload-selector that selects them, and that selector does.
func TestCheckNamesUnselectedWorkloads(t *testing.T) {
	aliased := func(names ...string) *policies.Snapshot {
		sc := scenario.BitnamiPostScaleDown()
		snap := sc.MustSnapshot()
		for i, p := range snap.Pods {
			p.Labels[scenario.AppLabel] = names[i%len(names)]
		}
		for _, sts := range snap.StatefulSets {
			sts.Spec.Template.Labels[scenario.AppLabel] = names[0]
		}
		return snap
	}
	bitnami := labels.SelectorFromSet(labels.Set{scenario.AppLabel: "redis-cluster"})
	for _, tc := range []struct {
		name     string
		snap     *policies.Snapshot
		selector labels.Selector
		want     []string
		// fixed is the selector the error advises, which must select a Redis cluster.
		fixed string
	}{
		{
			name: "Bitnami with nameOverride sessions → the pods, their chart and app.kubernetes.io/name=sessions",
			snap: aliased("sessions"), selector: bitnami,
			want: []string{"the workload selector app.kubernetes.io/name=redis-cluster (--workload-selector, selection.workloadSelector, or the layout's) matches none of them",
				"bitnami/redis-cluster-0, bitnami/redis-cluster-1, bitnami/redis-cluster-2, … (10 pods) of Bitnami's redis-cluster chart carry helm.sh/chart redis-cluster-13.0.5 and app.kubernetes.io/name sessions",
				"--workload-selector 'app.kubernetes.io/name=sessions' selects them"},
			fixed: "app.kubernetes.io/name=sessions",
		},
		{
			name:     "Bitnami under the alias sessions of the umbrella release web (helm.sh/chart sessions-13.0.5) → app.kubernetes.io/name=sessions",
			snap:     scenario.BitnamiAliasPostScaleDown().MustSnapshot(),
			selector: bitnami,
			want: []string{"bitnami/web-sessions-0, bitnami/web-sessions-1, bitnami/web-sessions-2, … (10 pods) of Bitnami's redis-cluster chart carry helm.sh/chart sessions-13.0.5 and app.kubernetes.io/name sessions",
				"--workload-selector 'app.kubernetes.io/name=sessions' selects them"},
			fixed: "app.kubernetes.io/name=sessions",
		},
		{
			name: "two names among the chart's pods → a set-based selector",
			snap: aliased("sessions", "cache"), selector: bitnami,
			want:  []string{"app.kubernetes.io/name cache, sessions", "--workload-selector 'app.kubernetes.io/name in (cache,sessions)' selects them"},
			fixed: "app.kubernetes.io/name in (cache,sessions)",
		},
		{
			name: "pods of no chart the selector misses → named, without advice",
			snap: scenario.PostScaleDown().MustSnapshot(), selector: bitnami,
			want: []string{"matches none of them; redis/redis-s0-0, redis/redis-s0-1, redis/redis-s1-0, … (10 pods) belong to no workload it names"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := policies.Options{ClusterLabel: scenario.BitnamiInstanceLabel, WorkloadSelector: tc.selector}
			if tc.snap.Pods[0].Labels[scenario.BitnamiInstanceLabel] == "" {
				opts.ClusterLabel = policies.DefaultClusterLabel
			}
			m, err := policies.Build(tc.snap, opts)
			if err != nil {
				t.Fatal(err)
			}
			err = Selection{}.Check(tc.snap, opts, m)
			if err == nil {
				t.Fatalf("Check: no error, %d clusters", len(m.Clusters))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if tc.fixed == "" {
				return
			}
			sel, err := labels.Parse(tc.fixed)
			if err != nil {
				t.Fatal(err)
			}
			opts.WorkloadSelector = sel
			if m, err = policies.Build(tc.snap, opts); err != nil || len(m.Clusters) != 1 {
				t.Errorf("with the advised selector %s: %v, %d clusters; want 1", tc.fixed, err, len(m.Clusters))
			}
		})
	}
	// Without a workload selector the message is what it was.
	snap := scenario.PostScaleDown().MustSnapshot()
	opts := policies.Options{RecreatingOwners: nil}
	for _, p := range snap.Pods {
		p.OwnerReferences[0].Kind = "ReplicaSet"
	}
	m, err := policies.Build(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Selection{}).Check(snap, opts, m); err == nil || strings.Contains(err.Error(), "workload selector") {
		t.Errorf("without a workload selector: %v, want no word of one", err)
	}
}
