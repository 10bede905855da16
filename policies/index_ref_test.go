package policies

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
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

// ExternalAntiDomains returns, for each member of the cluster, its pod's and its re-creation
// template's domains where a scheduled pod that is not a member has a required anti-affinity
// term matching it: as antiIndex.against finds them (got) and as a scan of every scheduled pod's
// terms finds them (want), each list "key=value", sorted.
func (c *Cluster) ExternalAntiDomains() (got, want [][]string) {
	m := c.model
	c.b = newBuilder(m)
	defer func() { c.b = nil }()
	names := func(refs []domainRef) []string {
		var out []string
		for _, r := range refs {
			for key, d := range m.domains {
				if d == r.dom {
					out = append(out, key+"="+d.names[r.id])
				}
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	scan := func(p *corev1.Pod) []domainRef {
		var out []domainRef
		for k, op := range m.pods {
			a := op.Spec.Affinity
			if c.memberOf(op) || a == nil || a.PodAntiAffinity == nil {
				continue
			}
			for ti := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				t, err := c.b.newTerm(op, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti], false, false)
				if err != nil || !t.matches(m, p.Namespace, labels.Set(p.Labels)) {
					continue
				}
				if d := t.dom.ofNode[m.podNode[k]]; d >= 0 {
					out = append(out, domainRef{t.dom, d})
				}
			}
		}
		return out
	}
	for _, mem := range c.Members {
		for _, p := range []*corev1.Pod{mem.Pod, mem.Template()} {
			got = append(got, names(m.anti.against(c, p)))
			want = append(want, names(scan(p)))
		}
	}
	return got, want
}
