package policies

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// spreadInstance is one topology spread constraint as kube-scheduler's PodTopologySpread plugin
// sees it for one incoming pod (its internal topologySpreadConstraint plus the PreFilter state
// that does not depend on the cluster's members): the eligible nodes, their domains, and the
// matching pods that are not members of the cluster.
type spreadInstance struct {
	constraint corev1.TopologySpreadConstraint
	selector   labels.Selector
	// countable is false for an empty selector: kube-scheduler's countPodsMatchSelector counts
	// no pod then (while the incoming pod still matches itself).
	countable  bool
	maxSkew    int
	minDomains int
	dom        *domainIndex
	// eligible[n]: node n counts (it has every topology key of the pod's constraints with the
	// same whenUnsatisfiable, and passes nodeAffinityPolicy/nodeTaintsPolicy). Shared.
	eligible []bool
	// numDomains is the number of distinct domains among eligible nodes.
	numDomains int
	// external[d] counts matching, scheduled, non-terminating pods in the namespace that are not
	// members of the cluster, on eligible nodes of domain d.
	external map[int32]int
	// extAsc lists the domains of external in ascending order of their count (then domain id),
	// so that the global minimum and the domains above it are found without visiting every
	// domain.
	extAsc []domainCount
	// matchCur[i] and matchNext[i] report whether member i's labels (as it runs now, and as its
	// template would re-create it) are counted.
	matchCur, matchNext []bool
}

// domainCount is a domain and a count of pods in it.
type domainCount struct {
	dom   int32
	count int
}

// sortExternal fills in.extAsc from in.external.
func (in *spreadInstance) sortExternal() {
	in.extAsc = make([]domainCount, 0, len(in.external))
	for d, n := range in.external {
		in.extAsc = append(in.extAsc, domainCount{d, n})
	}
	slices.SortFunc(in.extAsc, func(a, b domainCount) int {
		if a.count != b.count {
			return a.count - b.count
		}
		return int(a.dom - b.dom)
	})
}

// eligibility is the set of nodes a spread constraint counts, shared by signature.
type eligibility struct {
	nodes   []bool
	domains map[*domainIndex]int
}

// spreadOf sets s.spread: the instances of p's DoNotSchedule constraints. (ScheduleAnyway
// constraints only score nodes; they decide neither compliance nor feasibility.)
func (c *Cluster) spreadOf(p *corev1.Pod, s *podSpec, template bool, seen map[string]int) error {
	var arr [4]string
	keys := arr[:0]
	for k := range p.Spec.TopologySpreadConstraints {
		if tsc := &p.Spec.TopologySpreadConstraints[k]; tsc.WhenUnsatisfiable == corev1.DoNotSchedule {
			keys = append(keys, tsc.TopologyKey)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	keysID := c.b.keysID(keys)
	for k := range p.Spec.TopologySpreadConstraints {
		tsc := &p.Spec.TopologySpreadConstraints[k]
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		idx, err := c.spreadInstanceFor(p, s, tsc, template, keys, keysID, seen)
		if err != nil {
			return err
		}
		s.spread = append(s.spread, idx)
	}
	return nil
}

// spreadInstanceFor returns the index in *list of the instance of constraint tsc for incoming pod
// p, building it on first use. It mirrors kube-scheduler's filterTopologySpreadConstraints and
// calPreFilterState: matchLabelKeys merged into the selector (mergeLabelSetWithSelector, which
// leaves a Nothing selector alone), minDomains defaulting to 1, nodeAffinityPolicy Honor and
// nodeTaintsPolicy Ignore by default, nodes lacking any key of the same-action constraints
// skipped, pods of other namespaces and terminating pods not counted.
func (c *Cluster) spreadInstanceFor(p *corev1.Pod, s *podSpec, tsc *corev1.TopologySpreadConstraint, template bool, keys []string, keysID int32, seen map[string]int) (int, error) {
	m := c.model
	affinityPolicy := ptr.Deref(tsc.NodeAffinityPolicy, corev1.NodeInclusionPolicyHonor)
	taintsPolicy := ptr.Deref(tsc.NodeTaintsPolicy, corev1.NodeInclusionPolicyIgnore)
	// The nodes the instance counts depend on the keys and on the node affinity and tolerations
	// its policies honour.
	elig := [3]int32{keysID, 0, 0}
	if affinityPolicy == corev1.NodeInclusionPolicyHonor {
		elig[1] = s.aff
	}
	if taintsPolicy == corev1.NodeInclusionPolicyHonor {
		elig[2] = s.tol
	}
	// The instance's signature: the constraint, the values of its matchLabelKeys, eligibility.
	cid := c.b.constraintID(tsc, template)
	sb := &c.b.sig
	sb.reset()
	sb.num(int64(cid))
	sb.labelValues(tsc.MatchLabelKeys, p.Labels)
	sb.num(int64(elig[0]))
	sb.num(int64(elig[1]))
	sb.num(int64(elig[2]))
	if i, ok := seen[string(sb.b)]; ok {
		return i, nil
	}
	key := string(sb.b)

	sel, ok := c.b.ids.tscSelectors[cid]
	if !ok {
		var err error
		if sel, err = c.b.selector(tsc.LabelSelector); err != nil {
			return 0, fmt.Errorf("topologySpreadConstraint %s: %w", tsc.TopologyKey, err)
		}
		c.b.ids.tscSelectors[cid] = sel
	}
	matchLabels := labels.Set{}
	for _, k := range tsc.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			matchLabels[k] = v
		}
	}
	if len(matchLabels) > 0 {
		if reqs, ok := sel.Requirements(); ok {
			merged := labels.SelectorFromSet(matchLabels)
			sel = merged.Add(reqs...)
		}
	}
	in := &spreadInstance{
		constraint: *tsc,
		selector:   sel,
		countable:  !sel.Empty(),
		maxSkew:    int(tsc.MaxSkew),
		minDomains: int(ptr.Deref(tsc.MinDomains, 1)),
		dom:        m.domain(tsc.TopologyKey),
		external:   map[int32]int{},
	}
	el := c.b.eligibles[elig]
	if el == nil {
		el = &eligibility{nodes: make([]bool, len(m.Nodes)), domains: map[*domainIndex]int{}}
		var affinity, taints []bool
		if elig[1] != 0 {
			affinity = c.b.ids.affinity[elig[1]].mask
		}
		if elig[2] != 0 {
			taints = c.b.ids.taints[elig[2]]
		}
		doms := make([]*domainIndex, len(keys))
		for k, key := range keys {
			doms[k] = m.domain(key)
		}
		for i := range m.Nodes {
			ok := (affinity == nil || affinity[i]) && (taints == nil || taints[i])
			for _, d := range doms {
				if !ok {
					break
				}
				ok = d.ofNode[i] >= 0
			}
			el.nodes[i] = ok
		}
		c.b.eligibles[elig] = el
	}
	in.eligible = el.nodes
	nd, ok := el.domains[in.dom]
	if !ok {
		seenDom := map[int32]bool{}
		for i, e := range el.nodes {
			if e {
				seenDom[in.dom.ofNode[i]] = true
			}
		}
		nd = len(seenDom)
		el.domains[in.dom] = nd
	}
	in.numDomains = nd
	if in.countable {
		c.forNonMembers(sel, []string{p.Namespace}, func(k int32) {
			op, ni := m.pods[k], m.podNode[k]
			if op.Namespace != p.Namespace || !in.eligible[ni] || c.memberOf(op) || !sel.Matches(labels.Set(op.Labels)) {
				return
			}
			in.external[in.dom.ofNode[ni]]++
		})
	}
	in.sortExternal()
	seen[key] = len(c.spread)
	c.spread = append(c.spread, in)
	return len(c.spread) - 1, nil
}

func (c *Cluster) matchMembers(in *spreadInstance) {
	in.matchCur = make([]bool, len(c.Members))
	in.matchNext = make([]bool, len(c.Members))
	if !in.countable {
		return
	}
	for i, mem := range c.Members {
		in.matchCur[i] = in.selector.Matches(mem.cur.labels)
		if sameMap(mem.cur.labels, mem.next.labels) {
			in.matchNext[i] = in.matchCur[i]
		} else {
			in.matchNext[i] = in.selector.Matches(mem.next.labels)
		}
	}
}

// counted reports whether member j, placed as p[j], is counted by spread instance in.
func (c *Cluster) counted(in *spreadInstance, j int, p Placement) bool {
	if p[j] < 0 || !in.eligible[p[j]] {
		return false
	}
	if c.usesCur(j, p) {
		return in.matchCur[j]
	}
	return in.matchNext[j]
}

// spreadCounts returns the matching members per domain of in under placement p, member skip left
// out (-1: none), and the global minimum: kube-scheduler's minMatchNum, the smallest count of
// matching pods (members and in.external) over the eligible domains, or 0 when there are fewer
// eligible domains than minDomains. A domain's count, kube-scheduler's TpValueToMatchNum, is
// in.external[d] + members[d]. The cost is O(members), whatever the number of domains. The
// counts are written into into (empty) when it is not nil, else into a new map.
func (c *Cluster) spreadCounts(in *spreadInstance, p Placement, skip int, into map[int32]int) (members map[int32]int, min int) {
	members = into
	if members == nil {
		// A counted member is on an eligible node: in one of the numDomains eligible domains.
		hint := len(p)
		if in.numDomains < hint {
			hint = in.numDomains
		}
		members = make(map[int32]int, hint)
	}
	for j := range p {
		if j != skip && c.counted(in, j, p) {
			members[in.dom.ofNode[p[j]]]++
		}
	}
	if in.numDomains < in.minDomains {
		return members, 0
	}
	// Domains holding a matching pod: every external one, and the members' others.
	occupied := len(in.external)
	for d := range members {
		if in.external[d] == 0 {
			occupied++
		}
	}
	if occupied < in.numDomains {
		return members, 0 // some eligible domain holds no matching pod
	}
	min = -1
	for d, n := range members {
		if t := in.external[d] + n; min < 0 || t < min {
			min = t
		}
	}
	// External domains in ascending order: the first one without members is the lowest of them.
	for _, e := range in.extAsc {
		if min >= 0 && e.count >= min {
			break
		}
		if members[e.dom] == 0 {
			min = e.count
			break
		}
	}
	return members, max(min, 0)
}
