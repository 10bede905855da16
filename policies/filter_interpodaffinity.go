package policies

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// affinityTerm is a required (anti-)affinity term as kube-scheduler's framework.AffinityTerm
// holds it: the label selector, the namespaces (the pod's own when neither namespaces nor a
// namespaceSelector is given) and the namespace selector (Nothing when nil, Everything when {}).
type affinityTerm struct {
	selector labels.Selector
	// namespaces and scope are read only: a term of the pod's own namespace shares them
	// (builder.ownNS).
	namespaces sets.Set[string]
	nsSelector labels.Selector
	key        string
	dom        *domainIndex
	// scope lists the namespaces the term can match when it has no namespaceSelector (nil: any).
	scope []string
	// external holds the domain ids (of key) where a pod that is not a member of the cluster
	// matches the term (used for the incoming pod's anti-affinity).
	external map[int32]bool
}

// matches mirrors framework.AffinityTerm.Matches: p's namespace is listed or selected, and its
// labels match.
func (t *affinityTerm) matches(m *Model, ns string, lbl labels.Set) bool {
	if !t.namespaces.Has(ns) && !t.nsSelector.Matches(m.namespaceLabels(ns)) {
		return false
	}
	return t.selector.Matches(lbl)
}

// newTerm parses a pod (anti-)affinity term of pod p as kube-scheduler's newAffinityTerm does.
// For a template, matchLabelKeys and mismatchLabelKeys are merged into the selector as the API
// server does when it creates the pod (existing pods carry them merged already). The label
// selector goes through the builder's cache when cached (the terms of other workloads' pods, alike
// across their pods), else it is parsed (a cluster's own terms, which name the cluster and are
// deduplicated per cluster by the caller: a cache would only grow).
func (b *builder) newTerm(p *corev1.Pod, t *corev1.PodAffinityTerm, template, cached bool) (*affinityTerm, error) {
	m := b.m
	parse := b.selector
	if !cached {
		parse = selectorOf
	}
	sel, err := parse(t.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("pod affinity term %s: %w", t.TopologyKey, err)
	}
	if template && t.LabelSelector != nil {
		for _, k := range t.MatchLabelKeys {
			if v, ok := p.Labels[k]; ok {
				if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		for _, k := range t.MismatchLabelKeys {
			if v, ok := p.Labels[k]; ok {
				if r, err := labels.NewRequirement(k, selection.NotIn, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
	}
	nsSel, err := b.selector(t.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("pod affinity term %s namespaceSelector: %w", t.TopologyKey, err)
	}
	at := &affinityTerm{selector: sel, nsSelector: nsSel, key: t.TopologyKey, dom: m.domain(t.TopologyKey)}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		// The pod's own namespace: the set and the scope shared by the builder's terms.
		own, ok := b.ownNS[p.Namespace]
		if !ok {
			own = ownNamespace{set: sets.New(p.Namespace), scope: []string{p.Namespace}}
			b.ownNS[p.Namespace] = own
		}
		at.namespaces, at.scope = own.set, own.scope
		return at, nil
	}
	at.namespaces = sets.New(t.Namespaces...)
	if t.NamespaceSelector == nil {
		at.scope = sets.List(at.namespaces)
	}
	return at, nil
}

// termsFor returns the parsed terms (termFor) of pod p's required anti-affinity (anti) or
// affinity terms, nil when there are none.
func (c *Cluster) termsFor(p *corev1.Pod, terms []corev1.PodAffinityTerm, template, anti bool) ([]*affinityTerm, error) {
	var out []*affinityTerm
	for k := range terms {
		at, err := c.termFor(p, &terms[k], template, anti)
		if err != nil {
			return nil, err
		}
		out = append(out, at)
	}
	return out, nil
}

// termFor returns the parsed (anti-)affinity term t of pod p, shared by content within the
// cluster, with its external domains computed for anti-affinity.
func (c *Cluster) termFor(p *corev1.Pod, t *corev1.PodAffinityTerm, template, anti bool) (*affinityTerm, error) {
	sb := &c.b.sig
	sb.reset()
	if anti {
		sb.tag('a')
	} else {
		sb.tag('p')
	}
	sb.affinityTerm(t)
	sb.str(p.Namespace)
	if template {
		sb.tag('t')
		sb.labelValues(t.MatchLabelKeys, p.Labels)
		sb.labelValues(t.MismatchLabelKeys, p.Labels)
	}
	if at, ok := c.terms[string(sb.b)]; ok {
		return at, nil
	}
	key := string(sb.b)
	at, err := c.b.newTerm(p, t, template, false)
	if err != nil {
		return nil, err
	}
	if anti {
		at.external = c.externalDomains(at)
	}
	c.terms[key] = at
	return at, nil
}

// externalDomains returns the domain ids (of at's key) where a scheduled pod that is not a member
// of the cluster matches term at.
func (c *Cluster) externalDomains(at *affinityTerm) map[int32]bool {
	m := c.model
	out := map[int32]bool{}
	c.forNonMembers(at.selector, at.scope, func(k int32) {
		op := m.pods[k]
		if c.memberOf(op) || !at.matches(m, op.Namespace, labels.Set(op.Labels)) {
			return
		}
		if d := at.dom.ofNode[m.podNode[k]]; d >= 0 {
			out[d] = true
		}
	})
	return out
}

// affinityExternal fills s.affinityExt: kube-scheduler counts, for a pod's required affinity,
// the existing pods that match all of its terms, in each term's domain.
func (c *Cluster) affinityExternal(s *podSpec) {
	m := c.model
	if len(s.affinity) == 0 {
		return
	}
	s.affinityExt = make([]map[int32]bool, len(s.affinity))
	for k := range s.affinityExt {
		s.affinityExt[k] = map[int32]bool{}
	}
	c.forNonMembers(s.affinity[0].selector, s.affinity[0].scope, func(k int32) {
		op := m.pods[k]
		if c.memberOf(op) {
			return
		}
		lbl := labels.Set(op.Labels)
		for _, t := range s.affinity {
			if !t.matches(m, op.Namespace, lbl) {
				return
			}
		}
		for ti, t := range s.affinity {
			if d := t.dom.ofNode[m.podNode[k]]; d >= 0 {
				s.affinityExt[ti][d] = true
				s.affinityAny = true
			}
		}
	})
}

// preFilterInterPodAffinity prepares the per-term domains the other members offer to the
// incoming pod's required affinity, and whether the pod matches all its own affinity terms.
func (f *fitter) preFilterInterPodAffinity() {
	m, s := f.c.model, f.spec
	if len(s.affinity) > 0 {
		f.affinity = make([]map[int32]bool, len(s.affinity))
		for k := range f.affinity {
			f.affinity[k] = map[int32]bool{}
		}
		f.selfAff = true
		for _, t := range s.affinity {
			if !t.matches(m, s.namespace(), s.labels) {
				f.selfAff = false
			}
		}
	}
}

// addInterPodAffinity counts another member, placed on node nj with spec sj, as
// InterPodAffinity's PreFilter counts an existing pod: the domains where it matches one of the
// incoming pod's anti-affinity terms, where one of its own anti-affinity terms matches the
// incoming pod, and where it matches every affinity term of the incoming pod.
func (f *fitter) addInterPodAffinity(nj int, sj *podSpec) {
	m, s := f.c.model, f.spec
	ns := sj.namespace()
	for _, t := range s.anti {
		if d := t.dom.ofNode[nj]; d >= 0 && t.matches(m, ns, sj.labels) {
			f.anti = append(f.anti, domainRef{t.dom, d})
		}
	}
	for _, t := range sj.anti {
		if d := t.dom.ofNode[nj]; d >= 0 && t.matches(m, s.namespace(), s.labels) {
			f.existing = append(f.existing, domainRef{t.dom, d})
		}
	}
	if len(s.affinity) > 0 {
		all := true
		for _, t := range s.affinity {
			if !t.matches(m, ns, sj.labels) {
				all = false
				break
			}
		}
		if all {
			for k, t := range s.affinity {
				if d := t.dom.ofNode[nj]; d >= 0 {
					f.affinity[k][d] = true
					f.affAny = true
				}
			}
		}
	}
}

// satisfyPodAffinity is the first part of InterPodAffinity's Filter on node n (kube-scheduler's
// satisfyPodAffinity): every required affinity term of the incoming pod finds, in the node's
// domain of its key, a pod matching all the terms, unless no pod matches anywhere and the pod
// matches its own terms (the first pod of a series with affinity to itself). It returns the term
// whose key the node lacks, if that is the failure. check calls it for every node; it is kept
// small enough to be inlined there.
func (f *fitter) satisfyPodAffinity(n int) (reasonCode, *affinityTerm) {
	s := f.spec
	exist := true
	for k, t := range s.affinity {
		d := t.dom.ofNode[n]
		if d < 0 {
			return reasonAffinity, t
		}
		if !s.affinityExt[k][d] && !f.affinity[k][d] {
			exist = false
		}
	}
	if !exist && (s.affinityAny || f.affAny || !f.selfAff) {
		return reasonAffinity, nil
	}
	return fitOK, nil
}

// failure says why satisfyPodAffinity rejected a node: the key the node lacks (t), or nothing
// (t nil).
func (t *affinityTerm) failure() string {
	if t == nil {
		return ""
	}
	return t.key + " (missing label)"
}

// satisfyPodAntiAffinity is the second part of InterPodAffinity's Filter on node n
// (satisfyPodAntiAffinity): no pod matching one of the incoming pod's required anti-affinity terms
// runs in the node's domain of the term's key, neither a non-member nor another member. The
// detail is the key or the domain. Inlined into check.
func (f *fitter) satisfyPodAntiAffinity(n int) (reasonCode, string) {
	for _, t := range f.spec.anti {
		if d := t.dom.ofNode[n]; d >= 0 && t.external[d] {
			return reasonAntiAffinity, t.key
		}
	}
	for _, r := range f.anti {
		if r.dom.ofNode[n] == r.id {
			return reasonAntiAffinity, r.dom.names[r.id]
		}
	}
	return fitOK, ""
}

// satisfyExistingPodsAntiAffinity is the last part of InterPodAffinity's Filter on node n
// (satisfyExistingPodsAntiAffinity): no pod in the node's domains, non-member or member, has a
// required anti-affinity term matching the incoming pod. Inlined into check.
func (f *fitter) satisfyExistingPodsAntiAffinity(n int) reasonCode {
	if inDomains(f.spec.extAnti, n) || inDomains(f.existing, n) {
		return reasonExistingAntiAffinity
	}
	return fitOK
}
