package policies

import (
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// domainIndex maps nodes to the values of one topology key.
type domainIndex struct {
	ofNode []int32  // node index → domain id; -1 when the node lacks the key
	names  []string // domain id → value
}

// domain returns (building once, during Build) the domain index of a topology key. Safe for
// Build's workers; after Build only the keys built then are read.
func (m *Model) domain(key string) *domainIndex {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.domains[key]; ok {
		return d
	}
	d := &domainIndex{ofNode: make([]int32, len(m.Nodes))}
	ids := map[string]int32{}
	for i, n := range m.Nodes {
		v, ok := n.Obj.Labels[key]
		if !ok {
			d.ofNode[i] = -1
			continue
		}
		d.ofNode[i] = firstSeen(ids, &d.names, v)
	}
	m.domains[key] = d
	return d
}

// firstSeen returns the number of k in order of first sight: its id in ids, else the next one
// (len(*seen)), recorded in ids and appended to *seen.
func firstSeen[K comparable](ids map[K]int32, seen *[]K, k K) int32 {
	id, ok := ids[k]
	if !ok {
		id = int32(len(*seen))
		ids[k] = id
		*seen = append(*seen, k)
	}
	return id
}

// domainRef is one topology domain: a value (id) of a domain index.
type domainRef struct {
	dom *domainIndex
	id  int32
}

func inDomains(refs []domainRef, n int) bool {
	for _, r := range refs {
		if r.dom.ofNode[n] == r.id {
			return true
		}
	}
	return false
}

// labelIndexKey names a label index: the scheduled pods of namespace ns ("" for all namespaces)
// by value of label key.
type labelIndexKey struct{ ns, key string }

// labelIndex returns (building once, during Build) the scheduled pods of namespace ns (all when
// "") by value of label key. Safe for Build's workers.
func (m *Model) labelIndex(ns, key string) map[string][]int32 {
	k := labelIndexKey{ns, key}
	m.mu.Lock()
	idx, ok := m.labelIdx[k]
	m.mu.Unlock()
	if ok {
		return idx
	}
	idx = map[string][]int32{}
	add := func(k int32) {
		if v, ok := m.pods[k].Labels[key]; ok {
			idx[v] = append(idx[v], k)
		}
	}
	if ns == "" {
		for k := range m.pods {
			add(int32(k))
		}
	} else {
		for _, k := range m.podsInNS[ns] {
			add(k)
		}
	}
	m.mu.Lock()
	if prev, ok := m.labelIdx[k]; ok {
		idx = prev // another worker built it meanwhile
	} else {
		m.labelIdx[k] = idx
	}
	m.mu.Unlock()
	return idx
}

// forCandidates calls fn for every scheduled pod of the namespaces (all when nil) that may match
// sel: the pods carrying a value of sel's most selective `=`/`==`/`in` requirement, or, without
// one, every pod of the namespaces. fn still has to check the namespace and the selector. A
// Nothing selector has no candidates.
func (m *Model) forCandidates(sel labels.Selector, namespaces []string, fn func(k int32)) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return
	}
	scopes := namespaces
	if scopes == nil {
		scopes = []string{""}
	}
	best, bestN := -1, 0
	for ri, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		n := 0
		for _, ns := range scopes {
			idx := m.labelIndex(ns, r.Key())
			for _, v := range r.ValuesUnsorted() {
				n += len(idx[v])
			}
		}
		if best < 0 || n < bestN {
			best, bestN = ri, n
		}
	}
	if best < 0 {
		if namespaces == nil {
			for k := range m.pods {
				fn(int32(k))
			}
			return
		}
		for _, ns := range namespaces {
			for _, k := range m.podsInNS[ns] {
				fn(k)
			}
		}
		return
	}
	r := reqs[best]
	for _, ns := range scopes {
		idx := m.labelIndex(ns, r.Key())
		for _, v := range r.ValuesUnsorted() {
			for _, k := range idx[v] {
				fn(k)
			}
		}
	}
}

// forNonMembers calls fn for every scheduled pod of the namespaces (all when nil) that may match
// sel and may not be a member of c; fn still has to check the namespace, membership and the
// selector. When the namespaces are c's alone and sel requires the cluster label to be c's name,
// those pods are c's scheduled NotMembers: every unfinished pod of c's namespace carrying that
// value is a member or a NotMember of c (collectClusters), so no label index is read. Otherwise
// they are Model.forCandidates's.
func (c *Cluster) forNonMembers(sel labels.Selector, namespaces []string, fn func(k int32)) {
	if len(namespaces) == 1 && namespaces[0] == c.Namespace && c.requiresOwnName(sel) {
		for _, k := range c.notMemberPods {
			fn(k)
		}
		return
	}
	c.model.forCandidates(sel, namespaces, fn)
}

// requiresOwnName reports whether sel has a requirement that the cluster label's value be c's
// name (`=`, `==`, or `in` with that one value).
func (c *Cluster) requiresOwnName(sel labels.Selector) bool {
	reqs, ok := sel.Requirements()
	if !ok {
		return false
	}
	own := oneLabel{c.model.Options.ClusterLabel, c.Name}
	for i := range reqs {
		r := &reqs[i]
		if r.Key() != own.key {
			continue
		}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals: // one value
			if r.Matches(own) {
				return true
			}
		case selection.In:
			if vs := r.ValuesUnsorted(); len(vs) == 1 && vs[0] == c.Name {
				return true
			}
		}
	}
	return false
}

// oneLabel is a label set of one label (labels.Labels).
type oneLabel struct{ key, value string }

func (l oneLabel) Has(k string) bool { return k == l.key }

func (l oneLabel) Get(k string) string {
	v, _ := l.Lookup(k)
	return v
}

func (l oneLabel) Lookup(k string) (string, bool) {
	if k == l.key {
		return l.value, true
	}
	return "", false
}

// scheduledNotMembers returns the positions in Model.pods of c's NotMembers that are scheduled
// (those forNonMembers yields).
func (c *Cluster) scheduledNotMembers() []int32 {
	if len(c.NotMembers) == 0 {
		return nil
	}
	var out []int32
	for _, k := range c.model.podsInNS[c.Namespace] {
		if c.notMember[c.model.pods[k]] {
			out = append(out, k)
		}
	}
	return out
}

// namespaceLabels returns a namespace's labels: from Snapshot.Namespaces, else the
// kubernetes.io/metadata.name label the API server sets on every namespace. Build fills the
// entries of every pod's namespace; later calls only read.
func (m *Model) namespaceLabels(ns string) labels.Set {
	if l, ok := m.nsLabels[ns]; ok {
		return l
	}
	return labels.Set{corev1.LabelMetadataName: ns}
}

// antiIndex holds the required anti-affinity terms of every scheduled pod, by the namespace of
// the pods they can match, so that the terms matching an incoming pod are found from its
// namespace and labels (InterPodAffinity's existingAntiAffinityCounts). Each namespace's terms are
// indexed by the rarest label pair they require, on first use, by whichever of Build's workers
// needs it.
type antiIndex struct {
	entries []antiEntry
	// byNS lists, per namespace, the entries of terms without a namespaceSelector that select it
	// (their namespaces, or their pod's own); selected lists the terms with a namespaceSelector,
	// checked for every incoming pod.
	byNS     map[string]*nsAnti
	selected []int32
	// selectedKeys are the label keys the selected terms read (keysFor), set once.
	selectedOnce sync.Once
	selectedKeys []string
}

// nsAnti is one namespace's part of the anti-affinity index.
type nsAnti struct {
	entries []int32
	once    sync.Once
	byPair  map[labelPair][]int32
	generic []int32
	// own are the entries whose term can only match pods of its own pod's cluster (ownCluster),
	// which the index leaves out.
	own []int32
	// keys are the label keys the selectors of the namespace's terms and of the terms with a
	// namespaceSelector read (keysFor).
	keys []string
}

type labelPair struct{ key, value string }

type antiEntry struct {
	pod  int32 // index into Model.pods
	term *corev1.PodAffinityTerm
	// parsed is the term parsed on first use (by any of Build's workers); bad is set when it
	// does not parse.
	parsed atomic.Pointer[affinityTerm]
	bad    atomic.Bool
}

// rarestRequirement returns the label pairs of the requirement of selector ls that the fewest
// terms require, by freq: a matchLabels entry (one pair: key and one, values nil) or an `In`
// expression (a pair per value of values). ok is false when ls has no such requirement.
func rarestRequirement(ls *metav1.LabelSelector, freq map[labelPair]int32) (key, one string, values []string, ok bool) {
	if ls == nil {
		return "", "", nil, false
	}
	var best int32 = -1
	for k, v := range ls.MatchLabels {
		if n := freq[labelPair{k, v}]; best < 0 || n < best || n == best && k < key {
			best, key, one, values = n, k, v, nil
		}
	}
	for _, e := range ls.MatchExpressions {
		if e.Operator != metav1.LabelSelectorOpIn {
			continue
		}
		var n int32
		for _, v := range e.Values {
			n += freq[labelPair{e.Key, v}]
		}
		if best < 0 || n < best {
			best, key, values = n, e.Key, e.Values
		}
	}
	return key, one, values, best >= 0
}

// reserve sizes the index for the required anti-affinity terms of pods (at most those add
// records), so that it grows in one allocation.
func (x *antiIndex) reserve(pods []*corev1.Pod) {
	n := 0
	for _, p := range pods {
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			n += len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		}
	}
	x.entries = slices.Grow(x.entries, n)
}

// add records the required anti-affinity terms of scheduled pod k (Build's pod pass).
func (x *antiIndex) add(k int32, p *corev1.Pod) {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return
	}
	if x.byNS == nil {
		x.byNS = map[string]*nsAnti{}
	}
	for ti := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		t := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti]
		ei := int32(len(x.entries))
		x.entries = append(x.entries, antiEntry{pod: k, term: t})
		if t.NamespaceSelector != nil {
			x.selected = append(x.selected, ei)
			continue
		}
		add := func(ns string) {
			n := x.byNS[ns]
			if n == nil {
				n = &nsAnti{}
				x.byNS[ns] = n
			}
			n.entries = append(n.entries, ei)
		}
		if len(t.Namespaces) == 0 {
			add(p.Namespace)
		}
		for _, ns := range t.Namespaces {
			add(ns)
		}
	}
}

// ownCluster reports whether the term of entry ei can only match pods of the cluster of its pod:
// the pod is a member of the cluster its cluster label names (m.notMembers), and the term, of
// the pod's namespace alone, requires the cluster label to have that value.
func (x *antiIndex) ownCluster(m *Model, ei int32) bool {
	e := &x.entries[ei]
	t := e.term
	if len(t.Namespaces) > 0 || t.NamespaceSelector != nil || t.LabelSelector == nil {
		return false
	}
	op := m.pods[e.pod]
	key := m.Options.ClusterLabel
	v, ok := op.Labels[key]
	if !ok || m.notMembers[op] {
		return false
	}
	if w, ok := t.LabelSelector.MatchLabels[key]; ok && w == v {
		return true
	}
	for _, r := range t.LabelSelector.MatchExpressions {
		if r.Key == key && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 && r.Values[0] == v {
			return true
		}
	}
	return false
}

// index builds a namespace's label-pair index (once), the entries of own-cluster terms
// (ownCluster) apart.
func (x *antiIndex) index(m *Model, n *nsAnti) {
	n.once.Do(func() {
		n.keys = x.selectorKeys(n.entries, x.selectorKeys(x.selected, nil))
		indexed := make([]int32, 0, len(n.entries))
		for _, ei := range n.entries {
			if x.ownCluster(m, ei) {
				n.own = append(n.own, ei)
			} else {
				indexed = append(indexed, ei)
			}
		}
		freq := make(map[labelPair]int32, len(indexed))
		for _, ei := range indexed {
			if ls := x.entries[ei].term.LabelSelector; ls != nil {
				for k, v := range ls.MatchLabels {
					freq[labelPair{k, v}]++
				}
				for _, e := range ls.MatchExpressions {
					if e.Operator == metav1.LabelSelectorOpIn {
						for _, v := range e.Values {
							freq[labelPair{e.Key, v}]++
						}
					}
				}
			}
		}
		n.byPair = make(map[labelPair][]int32, len(indexed))
		for _, ei := range indexed {
			key, one, values, ok := rarestRequirement(x.entries[ei].term.LabelSelector, freq)
			if !ok {
				n.generic = append(n.generic, ei)
				continue
			}
			if values == nil {
				lp := labelPair{key, one}
				n.byPair[lp] = append(n.byPair[lp], ei)
				continue
			}
			for _, v := range values {
				lp := labelPair{key, v}
				n.byPair[lp] = append(n.byPair[lp], ei)
			}
		}
	})
}

// selectorKeys appends to keys the label keys the selectors of entries read that keys lacks.
func (x *antiIndex) selectorKeys(entries []int32, keys []string) []string {
	add := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, ei := range entries {
		if ls := x.entries[ei].term.LabelSelector; ls != nil {
			for k := range ls.MatchLabels {
				add(k)
			}
			for _, e := range ls.MatchExpressions {
				add(e.Key)
			}
		}
	}
	return keys
}

// keysFor returns the label keys whose values decide against's answer for a pod of namespace ns:
// two pods of ns whose labels agree on them get the same domains.
func (x *antiIndex) keysFor(m *Model, ns string) []string {
	n := x.byNS[ns]
	if n == nil {
		x.selectedOnce.Do(func() { x.selectedKeys = x.selectorKeys(x.selected, nil) })
		return x.selectedKeys
	}
	x.index(m, n)
	return n.keys
}

// against returns the domains where a scheduled pod that is not a member of c has a required
// anti-affinity term matching pod p.
func (x *antiIndex) against(c *Cluster, p *corev1.Pod) []domainRef {
	n := x.byNS[p.Namespace]
	if n == nil && len(x.selected) == 0 {
		return nil
	}
	m := c.model
	var out []domainRef
	lbl := labels.Set(p.Labels)
	check := func(ei int32) {
		e := &x.entries[ei]
		op := m.pods[e.pod]
		if e.bad.Load() || c.memberOf(op) {
			return
		}
		t := e.parsed.Load()
		if t == nil {
			var err error
			if t, err = c.b.newTerm(op, e.term, false, true); err != nil {
				e.bad.Store(true) // kube-scheduler cannot parse it either; the pod's terms are ignored
				return
			}
			e.parsed.Store(t)
		}
		if !t.matches(m, p.Namespace, lbl) {
			return
		}
		d := t.dom.ofNode[m.podNode[e.pod]]
		if d < 0 {
			return
		}
		for _, r := range out {
			if r.dom == t.dom && r.id == d {
				return
			}
		}
		out = append(out, domainRef{t.dom, d})
	}
	if n != nil {
		x.index(m, n)
		for k, v := range p.Labels {
			for _, ei := range n.byPair[labelPair{k, v}] {
				check(ei)
			}
		}
		for _, ei := range n.generic {
			check(ei)
		}
		// An own-cluster term matches only pods of its pod's cluster: c's pods are members (its
		// own terms skipped), and a pod of c carries c's name. Unless p names another cluster.
		if v, ok := p.Labels[m.Options.ClusterLabel]; ok && v != c.Name {
			for _, ei := range n.own {
				check(ei)
			}
		}
	}
	for _, ei := range x.selected {
		check(ei)
	}
	return out
}
