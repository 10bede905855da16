package policies

import (
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// podSpec is a pod's scheduling-relevant spec, converted once: which spread-constraint instances
// it carries, its inter-pod affinity terms, and which nodes it may use regardless of the
// cluster's members. The node masks are shared between every spec with the same tolerations and
// node affinity (model-level caches).
type podSpec struct {
	pod    *corev1.Pod
	labels labels.Set
	spread []int // indices into Cluster.spread (DoNotSchedule constraints)
	// anti and affinity are the required pod anti-affinity and affinity terms.
	anti, affinity []*affinityTerm
	// affinityExt, per affinity term, the domains of that term's key holding a non-member pod that
	// matches every affinity term (kube-scheduler's affinityCounts); affinityAny reports whether
	// there is any.
	affinityExt []map[int32]bool
	affinityAny bool
	// static[n] is fitOK when node n passes the node-level checks, in kube-scheduler's order
	// (NodeUnschedulable, TaintToleration, NodeAffinity), otherwise the first failing reason.
	static []reasonCode
	// aff and tol are the interned ids of the node affinity and the tolerations.
	aff, tol int32
	// affinityMask[n]: nodeSelector and required node affinity match node n.
	affinityMask []bool
	// extAnti are the domains where a pod that is not a member of the cluster has a required
	// anti-affinity term matching this pod (InterPodAffinity's existing-pods check).
	extAnti []domainRef
	// volume[n] is fitOK when every bound PersistentVolume of the pod allows node n (VolumeBinding,
	// VolumeZone), otherwise the reason; nil when no volume restricts.
	volume   []reasonCode
	requests resources
	// zoneList and zoneKey: the zones the pod's node affinity lists (nil without a list) and the
	// zone key its constraints use ("" when none).
	zoneList []string
	zoneKey  string
}

// domainRef is one topology domain: a value (id) of a domain index.
type domainRef struct {
	dom *domainIndex
	id  int32
}

// reasonCode names why a node does not fit; the text is kube-scheduler's (v1.36) message.
type reasonCode uint8

const (
	fitOK reasonCode = iota
	reasonUnschedulable
	reasonTaint
	reasonNodeAffinity
	reasonResources
	reasonVolume
	reasonVolumeZone
	reasonSpreadMissingLabel
	reasonSpread
	reasonAffinity
	reasonAntiAffinity
	reasonExistingAntiAffinity
)

var reasonText = [...]string{
	fitOK:                      "",
	reasonUnschedulable:        "node(s) were unschedulable",
	reasonTaint:                "node(s) had untolerated taint(s)",
	reasonNodeAffinity:         "node(s) didn't match Pod's node affinity/selector",
	reasonResources:            "node(s) had insufficient resources",
	reasonVolume:               "node(s) didn't match PersistentVolume's node affinity",
	reasonVolumeZone:           "node(s) had no available volume zone",
	reasonSpreadMissingLabel:   "node(s) didn't match pod topology spread constraints (missing required label)",
	reasonSpread:               "node(s) didn't match pod topology spread constraints",
	reasonAffinity:             "node(s) didn't match pod affinity rules",
	reasonAntiAffinity:         "node(s) didn't match pod anti-affinity rules",
	reasonExistingAntiAffinity: "node(s) didn't satisfy existing pods anti-affinity rules",
}

// affinityTerm is a required (anti-)affinity term as kube-scheduler's framework.AffinityTerm
// holds it: the label selector, the namespaces (the pod's own when neither namespaces nor a
// namespaceSelector is given) and the namespace selector (Nothing when nil, Everything when {}).
type affinityTerm struct {
	selector   labels.Selector
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

// buildSpecs converts every member's current pod and re-creation template once.
func (c *Cluster) buildSpecs() error {
	seen := map[string]int{}
	c.terms = map[string]*affinityTerm{}
	byTemplate := map[*corev1.PodTemplateSpec]*podSpec{}
	var sibling *podSpec // a template spec of another shard: its parts are likely equal
	for _, mem := range c.Members {
		var err error
		if mem.Template != mem.Pod {
			// The template first: its parts are memoized by address, and the running pod's parts
			// that equal them reuse their ids.
			tmpl := &mem.sts.Spec.Template
			if first := byTemplate[tmpl]; first != nil && sameLabelKeys(mem.Template, first.pod) {
				if mem.next, err = c.derivedSpec(mem.Template, first.requests, first); err != nil {
					return fmt.Errorf("template of pod %s: %w", mem.Key(), err)
				}
			} else {
				if mem.next, err = c.newPodSpec(mem.Template, c.b.templateRequests(mem.Template), true, sibling, seen); err != nil {
					return fmt.Errorf("template of pod %s: %w", mem.Key(), err)
				}
				if first == nil {
					byTemplate[tmpl] = mem.next
				}
				sibling = mem.next
			}
		}
		if mem.next != nil && c.sameScheduling(mem.Pod, mem.next) {
			if mem.cur, err = c.derivedSpec(mem.Pod, mem.req, mem.next); err != nil {
				return fmt.Errorf("pod %s: %w", mem.Key(), err)
			}
		} else if mem.cur, err = c.newPodSpec(mem.Pod, mem.req, false, mem.next, seen); err != nil {
			return fmt.Errorf("pod %s: %w", mem.Key(), err)
		}
		if mem.next == nil {
			mem.next = mem.cur
		}
	}
	for _, in := range c.spread {
		c.matchMembers(in)
	}
	return nil
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

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b labels.Set) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer())
}

// sameScheduling reports whether running pod p schedules exactly as its template's spec t: equal
// spread constraints (and equal values of their matchLabelKeys), node affinity, tolerations,
// required pod (anti-)affinity terms without label keys to merge, and volumes. Its spec can then
// be derived from the template's (derivedSpec) instead of being built.
func (c *Cluster) sameScheduling(p *corev1.Pod, t *podSpec) bool {
	tp := t.pod
	a, b := p.Spec.TopologySpreadConstraints, tp.Spec.TopologySpreadConstraints
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !equalConstraints(&a[k], &b[k]) {
			return false
		}
		for _, key := range a[k].MatchLabelKeys {
			v, ok := p.Labels[key]
			w, ok2 := tp.Labels[key]
			if ok != ok2 || v != w {
				return false
			}
		}
	}
	if !equalTolerations(p.Spec.Tolerations, tp.Spec.Tolerations) || !equalNodeAffinity(p, tp) {
		return false
	}
	var pa, pb, aa, ab []corev1.PodAffinityTerm
	if x := p.Spec.Affinity; x != nil {
		if x.PodAffinity != nil {
			pa = x.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		if x.PodAntiAffinity != nil {
			aa = x.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
	}
	if x := tp.Spec.Affinity; x != nil {
		if x.PodAffinity != nil {
			pb = x.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		if x.PodAntiAffinity != nil {
			ab = x.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
	}
	eq := func(x, y []corev1.PodAffinityTerm) bool {
		return slices.EqualFunc(x, y, func(s, t corev1.PodAffinityTerm) bool {
			return len(s.MatchLabelKeys) == 0 && len(s.MismatchLabelKeys) == 0 && equalTerms(&s, &t)
		})
	}
	if !eq(pa, pb) || !eq(aa, ab) {
		return false
	}
	// Volumes: a template takes the pod's volumes (plus template volumes the pod lacks).
	return sameVolumes(p, tp)
}

// sameLabelKeys reports whether templates a and b of one StatefulSet carry the same values for
// every matchLabelKeys and mismatchLabelKeys of their (shared) spec: then they schedule alike.
func sameLabelKeys(a, b *corev1.Pod) bool {
	same := func(keys []string) bool {
		for _, k := range keys {
			v, ok := a.Labels[k]
			w, ok2 := b.Labels[k]
			if ok != ok2 || v != w {
				return false
			}
		}
		return true
	}
	for k := range a.Spec.TopologySpreadConstraints {
		if !same(a.Spec.TopologySpreadConstraints[k].MatchLabelKeys) {
			return false
		}
	}
	if x := a.Spec.Affinity; x != nil {
		var terms []corev1.PodAffinityTerm
		if x.PodAffinity != nil {
			terms = append(terms, x.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
		if x.PodAntiAffinity != nil {
			terms = append(terms, x.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
		for k := range terms {
			if !same(terms[k].MatchLabelKeys) || !same(terms[k].MismatchLabelKeys) {
				return false
			}
		}
	}
	return true
}

// derivedSpec returns the spec of pod p (requests req) that schedules exactly as spec t: a running
// pod as its template (sameScheduling), or a template as another template of its StatefulSet
// (sameLabelKeys). It is t's parts with p's labels and requests, and the anti-affinity of other
// pods against p's labels.
func (c *Cluster) derivedSpec(p *corev1.Pod, req resources, t *podSpec) (*podSpec, error) {
	s := *t
	s.pod = p
	s.labels = labels.Set(p.Labels)
	s.requests = req
	if !sameMap(s.labels, t.labels) {
		s.extAnti = c.model.anti.against(c, p)
	}
	if !sameVolumes(p, t.pod) {
		var err error
		if s.volume, err = c.b.volumeMask(p); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// sameVolumes reports whether a and b share their volume list.
func sameVolumes(a, b *corev1.Pod) bool {
	return len(a.Spec.Volumes) == len(b.Spec.Volumes) && (len(a.Spec.Volumes) == 0 || &a.Spec.Volumes[0] == &b.Spec.Volumes[0])
}

// newPodSpec converts pod p with requests req: a re-creation template when template is set,
// otherwise a running (or Pending) pod. hint, when given, is a spec whose parts p's may equal (a
// pod's template, a sibling shard's template): equal node-level parts and spread constraints are
// taken from it instead of being looked up again. The API server has not seen a template yet, so
// the matchLabelKeys and mismatchLabelKeys of its affinity terms are merged here as the API server
// merges them at creation.
func (c *Cluster) newPodSpec(p *corev1.Pod, req resources, template bool, hint *podSpec, seen map[string]int) (*podSpec, error) {
	m := c.model
	s := &podSpec{pod: p, labels: labels.Set(p.Labels), requests: req}
	if hint != nil && equalTolerations(p.Spec.Tolerations, hint.pod.Spec.Tolerations) && equalNodeAffinity(p, hint.pod) {
		s.aff, s.tol = hint.aff, hint.tol
		s.static, s.affinityMask = hint.static, hint.affinityMask
	} else {
		s.aff = c.b.affinityID(p, template)
		s.tol = c.b.tolerationsID(p, template)
		s.affinityMask = c.b.ids.affinity[s.aff].mask
		s.static = c.b.staticMask(p, s.aff, s.tol)
	}
	if hint != nil && s.aff == hint.aff && s.tol == hint.tol && sameSpread(p, hint.pod) {
		s.spread = hint.spread
	} else if err := c.spreadOf(p, s, template, seen); err != nil {
		return nil, err
	}
	if a := p.Spec.Affinity; a != nil {
		if a.PodAntiAffinity != nil {
			for k := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				at, err := c.termFor(p, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[k], template, true)
				if err != nil {
					return nil, err
				}
				s.anti = append(s.anti, at)
			}
		}
		if a.PodAffinity != nil {
			for k := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				at, err := c.termFor(p, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[k], template, false)
				if err != nil {
					return nil, err
				}
				s.affinity = append(s.affinity, at)
			}
			c.affinityExternal(s)
		}
	}
	// The zone key the pod's constraints use: node affinity's zone list first, then spread
	// constraints, then anti-affinity.
	if ae := c.b.ids.affinity[s.aff]; ae.listed {
		s.zoneList, s.zoneKey = ae.zoneList, ae.zoneKey
	}
	for k := range p.Spec.TopologySpreadConstraints {
		if key := p.Spec.TopologySpreadConstraints[k].TopologyKey; s.zoneKey == "" && isZoneKey(key) {
			s.zoneKey = key
		}
	}
	for _, t := range s.anti {
		if s.zoneKey == "" && isZoneKey(t.key) {
			s.zoneKey = t.key
		}
	}
	s.extAnti = m.anti.against(c, p)
	vol, err := c.b.volumeMask(p)
	if err != nil {
		return nil, err
	}
	s.volume = vol
	return s, nil
}

// sameSpread reports whether pods a and b carry equal topology spread constraints and equal
// values for their matchLabelKeys.
func sameSpread(a, b *corev1.Pod) bool {
	x, y := a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints
	if len(x) != len(y) {
		return false
	}
	if len(x) > 0 && &x[0] == &y[0] {
		return sameLabelKeys(a, b)
	}
	for k := range x {
		if !equalConstraints(&x[k], &y[k]) {
			return false
		}
		for _, key := range x[k].MatchLabelKeys {
			v, ok := a.Labels[key]
			w, ok2 := b.Labels[key]
			if ok != ok2 || v != w {
				return false
			}
		}
	}
	return true
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
		m.forCandidates(sel, []string{p.Namespace}, func(k int32) {
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

// termFor returns the parsed (anti-)affinity term t of pod p, shared by content within the
// cluster, with its external domains computed for anti-affinity.
func (c *Cluster) termFor(p *corev1.Pod, t *corev1.PodAffinityTerm, template, anti bool) (*affinityTerm, error) {
	m := c.model
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
	at, err := c.b.newTerm(p, t, template)
	if err != nil {
		return nil, err
	}
	if anti {
		at.external = map[int32]bool{}
		m.forCandidates(at.selector, at.scope, func(k int32) {
			op := m.pods[k]
			if c.memberOf(op) || !at.matches(m, op.Namespace, labels.Set(op.Labels)) {
				return
			}
			if d := at.dom.ofNode[m.podNode[k]]; d >= 0 {
				at.external[d] = true
			}
		})
	}
	c.terms[key] = at
	return at, nil
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
	m.forCandidates(s.affinity[0].selector, s.affinity[0].scope, func(k int32) {
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

func requiredNodeAffinity(p *corev1.Pod) *corev1.NodeSelector {
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}
