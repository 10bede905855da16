package observe

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Selection picks Redis clusters: those of the selected namespaces, and those with at least one
// pod a label selector matches. The zero value selects every cluster.
type Selection struct {
	// Namespace keeps the clusters of this namespace ("" = all namespaces); reads from the API
	// server are limited to it.
	Namespace string
	// IncludeNamespaces, when not empty, keeps only the clusters of these namespaces, and
	// ExcludeNamespaces drops the clusters of those (the descheduler's Namespaces). Reads are
	// not limited by them.
	IncludeNamespaces, ExcludeNamespaces []string
	// Selector keeps the clusters with a pod whose labels it matches (nil or empty = all).
	Selector labels.Selector
	// AllowEmpty makes a selection that keeps no Redis cluster no error (Check).
	AllowEmpty bool
}

// NewSelection returns the Selection of namespace and the label selector in selector's text form
// (e.g. "app.kubernetes.io/name=redis"; "" selects all). It fails when selector does not parse.
func NewSelection(namespace, selector string) (Selection, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return Selection{}, fmt.Errorf("selector: %w", err)
	}
	return Selection{Namespace: namespace, Selector: sel}, nil
}

// Matches reports whether s selects cluster c.
func (s Selection) Matches(c *policies.Cluster) bool {
	if s.Namespace != "" && c.Namespace != s.Namespace {
		return false
	}
	if len(s.IncludeNamespaces) > 0 && !slices.Contains(s.IncludeNamespaces, c.Namespace) || slices.Contains(s.ExcludeNamespaces, c.Namespace) {
		return false
	}
	if s.Selector == nil || s.Selector.Empty() {
		return true
	}
	for _, m := range c.Members {
		if s.Selector.Matches(labels.Set(m.Pod.Labels)) {
			return true
		}
	}
	return false
}

// inNamespaces reports whether s's namespaces (Namespace, IncludeNamespaces, ExcludeNamespaces)
// hold namespace ns.
func (s Selection) inNamespaces(ns string) bool {
	if s.Namespace != "" && ns != s.Namespace {
		return false
	}
	return !(len(s.IncludeNamespaces) > 0 && !slices.Contains(s.IncludeNamespaces, ns) || slices.Contains(s.ExcludeNamespaces, ns))
}

// where names s's namespaces for a message: `namespace "redis"`, `namespaces a, b`, `every
// namespace but kube-system`, `every namespace`.
func (s Selection) where() string {
	switch {
	case s.Namespace != "":
		return fmt.Sprintf("namespace %q", s.Namespace)
	case len(s.IncludeNamespaces) > 0:
		return "namespaces " + strings.Join(s.IncludeNamespaces, ", ")
	case len(s.ExcludeNamespaces) > 0:
		return "every namespace but " + strings.Join(s.ExcludeNamespaces, ", ")
	}
	return "every namespace"
}

// Check returns nil when m (built from snap with opts, filtered by s) holds a Redis cluster or s
// allows none (AllowEmpty); else an error that says what matched nothing, so that a typo in a
// namespace, a cluster label or a label selector is not mistaken for compliance: no pod at all,
// no pod in the selected namespaces, no pod there carrying the cluster label, or no Redis
// cluster there with a pod the label selector matches.
func (s Selection) Check(snap *policies.Snapshot, opts policies.Options, m *policies.Model) error {
	if len(m.Clusters) > 0 || s.AllowEmpty {
		return nil
	}
	const allow = "; --allow-empty (selection.allowEmpty) accepts a selection without any"
	key := opts.ClusterLabel
	if key == "" {
		key = policies.DefaultClusterLabel
	}
	var inNS, labelled int
	for _, p := range snap.Pods {
		if !s.inNamespaces(p.Namespace) {
			continue
		}
		inNS++
		if _, ok := p.Labels[key]; ok {
			labelled++
		}
	}
	switch {
	case len(snap.Pods) == 0:
		return errors.New("no Redis cluster: there is no pod at all (an empty List or snapshot, or nothing the API server lists)" + allow)
	case inNS == 0:
		return fmt.Errorf("no Redis cluster: no pod in %s (%s elsewhere: is the namespace right? --namespace, selection.namespaces)%s", s.where(), policies.Plural(len(snap.Pods), "pod"), allow)
	case labelled == 0:
		return fmt.Errorf("no Redis cluster: %s in %s %s the cluster label %s (--cluster-label, selection.clusterLabel, or --layout)%s", policies.Agree(inNS, "the pod", fmt.Sprintf("none of the %d pods", inNS)), s.where(), policies.Agree(inNS, "does not carry", "carries"), key, allow)
	case s.Selector != nil && !s.Selector.Empty():
		return fmt.Errorf("no Redis cluster: %s in %s %s the cluster label %s, and no Redis cluster there has a pod the label selector %q matches (--selector, selection.labelSelector)%s", policies.Plural(labelled, "pod"), s.where(), policies.Agree(labelled, "carries", "carry"), key, s.Selector.String(), allow)
	}
	return fmt.Errorf("no Redis cluster: the %s in %s that %s the cluster label %s %s to no Redis cluster's workload%s%s", policies.Plural(labelled, "pod"), s.where(), policies.Agree(labelled, "carries", "carry"), key, policies.Agree(labelled, "belongs", "belong"), unselected(snap, s, opts, key), allow)
}

// unselected says, for Check's last case (pods with the cluster label, no Redis workload), which
// of them the workload selector (opts.WorkloadSelector) does not match, and, for those Bitnami's
// redis-cluster chart made under an alias or nameOverride (policies.BitnamiRedisCluster, another
// app.kubernetes.io/name: the bitnami layout selects redis-cluster), the --workload-selector that
// selects them; "" without a workload selector or when it matches every such pod (their owners
// are what keeps them out).
func unselected(snap *policies.Snapshot, s Selection, opts policies.Options, key string) string {
	sel := opts.WorkloadSelector
	if sel == nil || sel.Empty() {
		return ""
	}
	var others, chart []string                            // namespace/name
	names, charts := map[string]bool{}, map[string]bool{} // the chart's pods' app.kubernetes.io/name, helm.sh/chart
	for _, p := range snap.Pods {
		if _, ok := p.Labels[key]; !ok || !s.inNamespaces(p.Namespace) || sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		pod := p.Namespace + "/" + p.Name
		if policies.BitnamiRedisCluster(p.Labels, &p.Spec) && p.Labels[policies.LabelAppName] != "" {
			chart = append(chart, pod)
			names[p.Labels[policies.LabelAppName]] = true
			charts[p.Labels[policies.LabelHelmChart]] = true
			continue
		}
		others = append(others, pod)
	}
	if len(chart)+len(others) == 0 {
		return ""
	}
	out := fmt.Sprintf(": the workload selector %s (--workload-selector, selection.workloadSelector, or the layout's) matches none of them", sel)
	if len(chart) > 0 {
		sorted := slices.Sorted(maps.Keys(names))
		want := policies.LabelAppName + "=" + sorted[0]
		if len(sorted) > 1 {
			want = policies.LabelAppName + " in (" + strings.Join(sorted, ",") + ")"
		}
		out += fmt.Sprintf("; %s (%s) of Bitnami's redis-cluster chart %s %s %s and %s %s: the chart under an alias or nameOverride (an umbrella chart's subchart); --workload-selector '%s' selects them",
			strings.Join(firstOf(chart, 3), ", "), policies.Plural(len(chart), "pod"), policies.Agree(len(chart), "carries", "carry"),
			policies.LabelHelmChart, strings.Join(slices.Sorted(maps.Keys(charts)), ", "), policies.LabelAppName, strings.Join(sorted, ", "), want)
	}
	if len(others) > 0 {
		out += fmt.Sprintf("; %s (%s) %s to no workload it names", strings.Join(firstOf(others, 3), ", "), policies.Plural(len(others), "pod"), policies.Agree(len(others), "belongs", "belong"))
	}
	return out
}

// firstOf returns the first n of names, sorted, and "…" when there are more.
func firstOf(names []string, n int) []string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], "…")
}

// CheckRedis is Check after DropNotRedis: when every selected Redis cluster was left out as no
// Redis Cluster (dropped, their keys; errs, the read errors by key), the selection matched no
// Redis cluster, an error naming them and the first reason (a wrong Redis port looks the same as
// a workload that is not Redis), unless allowed.
func (s Selection) CheckRedis(m *policies.Model, dropped []string, errs map[string]error) error {
	if len(m.Clusters) > 0 || len(dropped) == 0 || s.AllowEmpty {
		return nil
	}
	return fmt.Errorf("no Redis cluster: every workload selected was left out as no Redis Cluster (%s: %v); is the Redis port right (--redis-port, redis.port)? selection.workloadSelector names the Redis workloads; --allow-empty (selection.allowEmpty) accepts a selection without any",
		strings.Join(dropped, ", "), errs[dropped[0]])
}

// Filter keeps in m.Clusters, in their order, only the clusters s selects.
func (s Selection) Filter(m *policies.Model) {
	kept := m.Clusters[:0]
	for _, c := range m.Clusters {
		if s.Matches(c) {
			kept = append(kept, c)
		}
	}
	m.Clusters = kept
}
