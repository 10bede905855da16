package policies

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// The optional soft rules: SoftTopologySpread (the ScheduleAnyway topology spread constraints,
// judged as the DoNotSchedule ones are) and PreferredAntiAffinity (preferred pod anti-affinity
// terms). kube-scheduler only scores nodes with them, so neither the filter nor the planner's
// State reads them: they are converted on first use, when a policy enables one of the rules.

// softIndex is what the optional soft rules read of a cluster, built once (softIndexOf).
type softIndex struct {
	// spread are the ScheduleAnyway constraint instances; spreadOf maps a member's spec (its
	// running pod's or its template's) to the instances it carries.
	spread   []*spreadInstance
	spreadOf map[*podSpec][]int
	// preferred maps a member's spec to its preferred anti-affinity terms.
	preferred map[*podSpec][]preferredTerm
}

// preferredTerm is one preferred pod anti-affinity term: the parsed term (its external domains
// hold the pods that are not members of the cluster and match it) and its weight.
type preferredTerm struct {
	*affinityTerm
	weight int32
}

// softSpread is the part of softIndex SoftTopologySpread reads.
type softSpread struct {
	instances []*spreadInstance
	of        map[*podSpec][]int
}

// softSpreadOf returns the cluster's ScheduleAnyway constraint instances and the instances each
// member spec carries.
func (c *Cluster) softSpreadOf() softSpread {
	x := c.softIndexOf()
	return softSpread{instances: x.spread, of: x.spreadOf}
}

// softIndexOf returns the cluster's softIndex, building it on first use. A constraint or term
// that does not parse (Build has parsed the required ones; the preferred ones are read here
// first) is left out.
func (c *Cluster) softIndexOf() *softIndex {
	c.softOnce.Do(func() {
		c.read.Store(true)
		c.soft = c.buildSoftIndex()
	})
	return c.soft
}

func (c *Cluster) buildSoftIndex() *softIndex {
	m := c.model
	b := newBuilder(m)
	x := &softIndex{spreadOf: map[*podSpec][]int{}, preferred: map[*podSpec][]preferredTerm{}}
	seen := map[string]int{}
	terms := map[string]*affinityTerm{}
	eligible := map[string]*eligibility{}
	for _, mem := range c.Members {
		for _, s := range []*podSpec{mem.cur, mem.next} {
			if _, done := x.spreadOf[s]; done {
				continue
			}
			template := s == mem.next && mem.sts != nil
			x.spreadOf[s] = c.softInstances(b, s, x, seen, eligible)
			x.preferred[s] = c.preferredTerms(b, s, template, terms)
		}
	}
	for _, in := range x.spread {
		c.matchMembers(in)
	}
	return x
}

// softInstances returns the indexes in x.spread of the ScheduleAnyway constraints of spec s,
// building each instance on first sight, as spreadInstanceFor builds a DoNotSchedule one: the
// selector with matchLabelKeys merged, eligible nodes those that have every key of the pod's
// ScheduleAnyway constraints and pass its node affinity (nodeAffinityPolicy Honor, the default)
// and its tolerations (nodeTaintsPolicy Honor), and the matching pods that are not members.
func (c *Cluster) softInstances(b *builder, s *podSpec, x *softIndex, seen map[string]int, eligible map[string]*eligibility) []int {
	m := c.model
	p := s.podOf()
	var keys []string
	for k := range p.Spec.TopologySpreadConstraints {
		if tsc := &p.Spec.TopologySpreadConstraints[k]; tsc.WhenUnsatisfiable == corev1.ScheduleAnyway {
			keys = append(keys, tsc.TopologyKey)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var out []int
	for k := range p.Spec.TopologySpreadConstraints {
		tsc := &p.Spec.TopologySpreadConstraints[k]
		if tsc.WhenUnsatisfiable != corev1.ScheduleAnyway {
			continue
		}
		affinityPolicy := ptr.Deref(tsc.NodeAffinityPolicy, corev1.NodeInclusionPolicyHonor)
		taintsPolicy := ptr.Deref(tsc.NodeTaintsPolicy, corev1.NodeInclusionPolicyIgnore)
		// Eligibility: the keys, and the node affinity and tolerations the policies honour.
		sb := &b.sig
		sb.reset()
		sb.strs(keys)
		if affinityPolicy == corev1.NodeInclusionPolicyHonor {
			sb.nodeAffinity(p)
		}
		if taintsPolicy == corev1.NodeInclusionPolicyHonor {
			sb.tag('T')
			sb.tolerations(p.Spec.Tolerations)
		}
		eligKey := string(sb.b)
		el := eligible[eligKey]
		if el == nil {
			el = &eligibility{nodes: make([]bool, len(m.Nodes)), domains: map[*domainIndex]int{}}
			var taints []bool
			if taintsPolicy == corev1.NodeInclusionPolicyHonor {
				taints = m.taintMask(p.Spec.Tolerations)
			}
			doms := make([]*domainIndex, len(keys))
			for i, key := range keys {
				doms[i] = m.domain(key)
			}
			for n := range m.Nodes {
				ok := (affinityPolicy != corev1.NodeInclusionPolicyHonor || s.affinityMask[n]) && (taints == nil || taints[n])
				for _, d := range doms {
					ok = ok && d.ofNode[n] >= 0
				}
				el.nodes[n] = ok
			}
			eligible[eligKey] = el
		}
		// The instance: the constraint, the values of its matchLabelKeys, the eligibility.
		sb.reset()
		sb.tag('S')
		sb.num(int64(tsc.MaxSkew))
		sb.str(tsc.TopologyKey)
		sb.labelSelector(tsc.LabelSelector)
		sb.optInt32(tsc.MinDomains)
		sb.strs(tsc.MatchLabelKeys)
		sb.labelValues(tsc.MatchLabelKeys, p.Labels)
		sb.str(p.Namespace)
		sb.str(eligKey)
		if i, ok := seen[string(sb.b)]; ok {
			out = append(out, i)
			continue
		}
		key := string(sb.b)
		sel, err := b.selector(tsc.LabelSelector)
		if err != nil {
			continue
		}
		sel = mergeMatchLabelKeys(sel, tsc.MatchLabelKeys, p.Labels)
		in := &spreadInstance{
			constraint: *tsc, selector: sel, countable: !sel.Empty(),
			maxSkew: int(tsc.MaxSkew), minDomains: int(ptr.Deref(tsc.MinDomains, 1)),
			dom: m.domain(tsc.TopologyKey), external: map[int32]int{}, eligible: el.nodes,
		}
		nd, ok := el.domains[in.dom]
		if !ok {
			doms := map[int32]bool{}
			for n, e := range el.nodes {
				if e {
					doms[in.dom.ofNode[n]] = true
				}
			}
			nd = len(doms)
			el.domains[in.dom] = nd
		}
		in.numDomains = nd
		c.countExternal(in, p.Namespace)
		seen[key] = len(x.spread)
		out = append(out, len(x.spread))
		x.spread = append(x.spread, in)
	}
	return out
}

// mergeMatchLabelKeys adds to sel a requirement per key of keys that lbl carries (kube-scheduler's
// mergeLabelSetWithSelector, which leaves a Nothing selector alone).
func mergeMatchLabelKeys(sel labels.Selector, keys []string, lbl map[string]string) labels.Selector {
	set := labels.Set{}
	for _, k := range keys {
		if v, ok := lbl[k]; ok {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return sel
	}
	if reqs, ok := sel.Requirements(); ok {
		return labels.SelectorFromSet(set).Add(reqs...)
	}
	return sel
}

// countExternal fills in.external: the matching, scheduled, non-terminating pods of namespace ns
// that are not members of the cluster, per domain of in's eligible nodes; then in.extAsc.
func (c *Cluster) countExternal(in *spreadInstance, ns string) {
	m := c.model
	if in.countable {
		c.forNonMembers(in.selector, []string{ns}, func(k int32) {
			op, ni := m.pods[k], m.podNode[k]
			if op.Namespace != ns || !in.eligible[ni] || c.memberOf(op) || !in.selector.Matches(labels.Set(op.Labels)) {
				return
			}
			in.external[in.dom.ofNode[ni]]++
		})
	}
	in.sortExternal()
}

// preferredTerms returns spec s's preferred pod anti-affinity terms, parsed as kube-scheduler
// parses them (newTerm: the pod's namespace when neither namespaces nor a namespaceSelector is
// given; a template's matchLabelKeys merged), each with the domains where a pod that is not a
// member matches it. Terms are shared by content.
func (c *Cluster) preferredTerms(b *builder, s *podSpec, template bool, seen map[string]*affinityTerm) []preferredTerm {
	p := s.podOf()
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return nil
	}
	var out []preferredTerm
	for k := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		wt := &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[k]
		sb := &b.sig
		sb.reset()
		sb.affinityTerm(&wt.PodAffinityTerm)
		sb.str(p.Namespace)
		if template {
			sb.tag('t')
			sb.labelValues(wt.PodAffinityTerm.MatchLabelKeys, p.Labels)
			sb.labelValues(wt.PodAffinityTerm.MismatchLabelKeys, p.Labels)
		}
		at, ok := seen[string(sb.b)]
		if !ok {
			key := string(sb.b)
			var err error
			if at, err = b.newTerm(p, &wt.PodAffinityTerm, template, false); err != nil {
				continue
			}
			at.external = c.externalDomains(at)
			seen[key] = at
		}
		out = append(out, preferredTerm{affinityTerm: at, weight: wt.Weight})
	}
	return out
}

// preferredAntiAffinity reports, per placed member and preferred anti-affinity term of the spec
// it runs with, the term's domain when another placed member the term selects, or a pod that is
// not a member, shares it. Count is the number of such pods (a pod that is not a member counts
// once per domain), Limit 0.
func (c *Cluster) preferredAntiAffinity(p Placement, brief bool) []Violation {
	x := c.softIndexOf()
	m := c.model
	var out []Violation
	for j, n := range p {
		if n < 0 {
			continue
		}
		for _, t := range x.preferred[c.specOf(j, p)] {
			d := t.dom.ofNode[n]
			if d < 0 {
				continue
			}
			var with []int
			for k, nk := range p {
				if k == j || nk < 0 || t.dom.ofNode[nk] != d {
					continue
				}
				mk := c.Members[k]
				if t.matches(m, mk.Pod.Namespace, c.specOf(k, p).labels) {
					with = append(with, k)
				}
			}
			count := len(with)
			if t.external[d] {
				count++
			}
			if count == 0 {
				continue
			}
			v := Violation{Rule: PreferredAntiAffinity, Domain: t.dom.names[d], TopologyKey: t.key, Count: count, Limit: 0}
			if !brief {
				v.Pods = c.podNames(append([]int{j}, with...))
				names := c.podNames(with)
				if t.external[d] {
					names = append(names, "a pod of another workload")
				}
				v.Message = fmt.Sprintf("%s prefers (weight %d) no pod its anti-affinity term selects in %s=%s; %s there", c.Members[j].Key(), t.weight, t.key, t.dom.names[d], strings.Join(names, ", "))
			}
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return strings.Compare(a.Domain, b.Domain) })
	return out
}
