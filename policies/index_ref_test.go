package policies

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// NonMembersMatching returns the scheduled pods ("namespace/name", sorted) of the namespaces
// (all when nil) that match sel and are not members of the cluster, as forNonMembers finds them
// (got) and as the model's label indexes find them (want, Model.forCandidates), and whether
// forNonMembers took the cluster's NotMembers instead of the indexes.
func (c *Cluster) NonMembersMatching(sel labels.Selector, namespaces []string) (got, want []string, own bool) {
	m := c.model
	collect := func(out *[]string) func(k int32) {
		return func(k int32) {
			op := m.pods[k]
			if namespaces != nil && !slices.Contains(namespaces, op.Namespace) || c.memberOf(op) || !sel.Matches(labels.Set(op.Labels)) {
				return
			}
			*out = append(*out, op.Namespace+"/"+op.Name)
		}
	}
	c.forNonMembers(sel, namespaces, collect(&got))
	m.forCandidates(sel, namespaces, collect(&want))
	slices.Sort(got)
	slices.Sort(want)
	return got, want, len(namespaces) == 1 && namespaces[0] == c.Namespace && c.requiresOwnName(sel)
}
