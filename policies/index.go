package policies

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

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

// antiIndex holds the required anti-affinity terms of every scheduled pod, indexed by the rarest
// label pair their selector requires, so that the terms matching an incoming pod are found from
// its labels (InterPodAffinity's existingAntiAffinityCounts).
type antiIndex struct {
	entries []antiEntry
	byPair  map[labelPair][]int32
	generic []int32
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
// pods satisfy, by freq: a matchLabels entry (one pair) or an `In` expression (a pair per value).
// ok is false when ls has no such requirement.
func rarestRequirement(ls *metav1.LabelSelector, freq map[labelPair]int) (key string, values []string, ok bool) {
	if ls == nil {
		return "", nil, false
	}
	best := -1
	for k, v := range ls.MatchLabels {
		if n := freq[labelPair{k, v}]; best < 0 || n < best || n == best && k < key {
			best, key, values = n, k, []string{v}
		}
	}
	for _, e := range ls.MatchExpressions {
		if e.Operator != metav1.LabelSelectorOpIn {
			continue
		}
		n := 0
		for _, v := range e.Values {
			n += freq[labelPair{e.Key, v}]
		}
		if best < 0 || n < best {
			best, key, values = n, e.Key, e.Values
		}
	}
	return key, values, best >= 0
}

func (x *antiIndex) build(m *Model) {
	freq := map[labelPair]int{}
	for k, p := range m.pods {
		a := p.Spec.Affinity
		if a == nil || a.PodAntiAffinity == nil {
			continue
		}
		for ti := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			t := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti]
			x.entries = append(x.entries, antiEntry{pod: int32(k), term: t})
			if ls := t.LabelSelector; ls != nil {
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
	}
	x.byPair = map[labelPair][]int32{}
	for ei := range x.entries {
		key, values, ok := rarestRequirement(x.entries[ei].term.LabelSelector, freq)
		if !ok {
			x.generic = append(x.generic, int32(ei))
			continue
		}
		for _, v := range values {
			lp := labelPair{key, v}
			x.byPair[lp] = append(x.byPair[lp], int32(ei))
		}
	}
}

// against returns the domains where a scheduled pod that is not a member of c has a required
// anti-affinity term matching pod p.
func (x *antiIndex) against(c *Cluster, p *corev1.Pod) []domainRef {
	if len(x.entries) == 0 {
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
			if t, err = c.b.newTerm(op, e.term, false); err != nil {
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
	for k, v := range p.Labels {
		for _, ei := range x.byPair[labelPair{k, v}] {
			check(ei)
		}
	}
	for _, ei := range x.generic {
		check(ei)
	}
	return out
}
