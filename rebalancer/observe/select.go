package observe

import (
	"fmt"
	"slices"

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
