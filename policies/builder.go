package policies

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// builder holds the caches one worker of Build uses while it converts clusters: interned
// signatures of pod-spec parts and what they resolve to (node masks, parsed selectors, eligible
// nodes, volume masks). Workers do not share builders; what they produce (masks, selectors,
// terms) is immutable and may end up shared by the clusters of one worker. A builder is dropped
// when Build returns.
type builder struct {
	m         *Model
	ids       interner
	eligibles map[[3]int32]*eligibility // keys, node affinity and tolerations ids → eligible nodes
	selectors map[string]labels.Selector
	volumes   map[string][]reasonCode // bound PersistentVolume checks by signature
	zoneSets  map[zoneSetKey][]string // node affinity mask → zones of the nodes it admits
	usableIn  map[string]map[string]int
	// reqByContainers memoizes template requests by container slice.
	reqByContainers map[*corev1.Container]podRequests
	// scratch holds the templates of the cluster being converted (templatePods).
	scratch     []corev1.Pod
	sig, selSig sigBuf
	// ownNS holds, by namespace, the namespaces and scope of a term that names none (newTerm).
	ownNS map[string]ownNamespace
}

// ownNamespace is an affinity term's namespaces and scope when they are its pod's namespace only.
type ownNamespace struct {
	set   sets.Set[string]
	scope []string
}

func newBuilder(m *Model) *builder {
	return &builder{
		m:               m,
		ids:             newInterner(),
		eligibles:       map[[3]int32]*eligibility{},
		selectors:       map[string]labels.Selector{},
		volumes:         map[string][]reasonCode{},
		zoneSets:        map[zoneSetKey][]string{},
		usableIn:        map[string]map[string]int{},
		reqByContainers: map[*corev1.Container]podRequests{},
		ownNS:           map[string]ownNamespace{},
	}
}

// templatePods returns n zeroed pods to build one cluster's re-creation templates in
// (Cluster.buildSpecs), reusing those of the cluster converted before.
func (b *builder) templatePods(n int) []corev1.Pod {
	if cap(b.scratch) < n {
		b.scratch = make([]corev1.Pod, n)
	}
	s := b.scratch[:n]
	clear(s)
	return s
}

// interner maps the signatures of pod-spec parts (node affinity, tolerations, a spread
// constraint, an affinity term, a list of topology keys) to small ids, so that composite cache
// keys are a few numbers instead of the parts' content. Templates of one StatefulSet share their
// spec's slices and pointers, so their parts are also memoized by address (never a running pod's:
// those are all distinct).
type interner struct {
	ids map[string]int32

	affByPtr map[*corev1.Affinity]int32
	tolByPtr map[*corev1.Toleration]int32
	tscByPtr map[*corev1.TopologySpreadConstraint]int32

	// Per node-affinity id: the mask of nodes it admits and the zone list it writes.
	affinity map[int32]*affinityEntry
	// Per tolerations id: the nodes whose NoSchedule/NoExecute taints are tolerated.
	taints map[int32][]bool
	// Per (node affinity, tolerations) ids: the node-level checks.
	statics map[[2]int32][]reasonCode
	// Per spread-constraint id: the parsed labelSelector (before matchLabelKeys).
	tscSelectors map[int32]labels.Selector
}

type affinityEntry struct {
	mask     []bool
	zoneList []string
	zoneKey  string
	listed   bool
}

func newInterner() interner {
	return interner{
		ids:          map[string]int32{},
		affByPtr:     map[*corev1.Affinity]int32{},
		tolByPtr:     map[*corev1.Toleration]int32{},
		tscByPtr:     map[*corev1.TopologySpreadConstraint]int32{},
		affinity:     map[int32]*affinityEntry{},
		taints:       map[int32][]bool{},
		statics:      map[[2]int32][]reasonCode{},
		tscSelectors: map[int32]labels.Selector{},
	}
}

// intern returns the id of signature b (assigning the next id on first sight) and whether it is
// new.
func (x *interner) intern(b []byte) (int32, bool) {
	if id, ok := x.ids[string(b)]; ok {
		return id, false
	}
	id := int32(len(x.ids) + 1)
	x.ids[string(b)] = id
	return id, true
}

// partID returns the id of a pod-spec part: memoized by the part's address addr when byAddr (a
// template's part: the templates of one StatefulSet share it), else found by its signature, which
// sig writes into b.sig. On the builder's first sight of a signature, fresh (when not nil) runs
// with the new id while b.sig still holds the signature.
func partID[K comparable](b *builder, memo map[K]int32, addr K, byAddr bool, sig func(*sigBuf), fresh func(id int32)) int32 {
	if byAddr {
		if id, ok := memo[addr]; ok {
			return id
		}
	}
	sb := &b.sig
	sb.reset()
	sig(sb)
	id, isNew := b.ids.intern(sb.b)
	if isNew && fresh != nil {
		fresh(id)
	}
	if byAddr {
		memo[addr] = id
	}
	return id
}

// sharedEntry returns the entry of signature sig in shared, a cache of m that every Build worker
// uses under m.sharedMu, building it on the first sight by any worker.
func sharedEntry[V any](m *Model, shared map[string]V, sig []byte, build func() V) V {
	m.sharedMu.Lock()
	defer m.sharedMu.Unlock()
	e, ok := shared[string(sig)]
	if !ok {
		e = build()
		shared[string(sig)] = e
	}
	return e
}

// affinityID returns the id of p's nodeSelector and required node affinity (what
// nodeaffinity.GetRequiredNodeAffinity reads), building its node mask and zone list on first
// sight. The entry is shared by every worker (one mask per distinct node affinity).
func (b *builder) affinityID(p *corev1.Pod, template bool) int32 {
	byAddr := template && p.Spec.Affinity != nil && len(p.Spec.NodeSelector) == 0
	return partID(b, b.ids.affByPtr, p.Spec.Affinity, byAddr, func(sb *sigBuf) { sb.nodeAffinity(p) }, func(id int32) {
		b.ids.affinity[id] = sharedEntry(b.m, b.m.sharedAffinity, b.sig.b, func() *affinityEntry {
			e := &affinityEntry{mask: b.m.nodeAffinityMask(p)}
			e.zoneList, e.zoneKey, e.listed = zoneList(p)
			return e
		})
	})
}

// tolerationsID returns the id of p's tolerations, building the taint mask (taintMask) on first
// sight. The mask is shared by every worker (one per distinct set of tolerations).
func (b *builder) tolerationsID(p *corev1.Pod, template bool) int32 {
	ts := p.Spec.Tolerations
	var first *corev1.Toleration
	if len(ts) > 0 {
		first = &ts[0]
	}
	return partID(b, b.ids.tolByPtr, first, template && len(ts) > 0, func(sb *sigBuf) { sb.tolerations(ts) }, func(id int32) {
		b.ids.taints[id] = sharedEntry(b.m, b.m.sharedTaints, b.sig.b, func() []bool { return b.m.taintMask(ts) })
	})
}

// constraintID returns the id of a topology spread constraint's content.
func (b *builder) constraintID(tsc *corev1.TopologySpreadConstraint, template bool) int32 {
	return partID(b, b.ids.tscByPtr, tsc, template, func(sb *sigBuf) {
		sb.tag('S')
		sb.num(int64(tsc.MaxSkew))
		sb.str(tsc.TopologyKey)
		sb.str(string(tsc.WhenUnsatisfiable))
		sb.labelSelector(tsc.LabelSelector)
		sb.optInt32(tsc.MinDomains)
		sb.strs(tsc.MatchLabelKeys)
		sb.optPolicy(tsc.NodeAffinityPolicy)
		sb.optPolicy(tsc.NodeTaintsPolicy)
	}, nil)
}

// keysID returns the id of a list of topology keys.
func (b *builder) keysID(keys []string) int32 {
	sb := &b.sig
	sb.reset()
	sb.tag('K')
	sb.strs(keys)
	id, _ := b.ids.intern(sb.b)
	return id
}

// selector parses a label selector as metav1.LabelSelectorAsSelector does (nil: Nothing, empty:
// Everything), cached by content. A selector of matchLabels only is built without re-validating
// what the API server has validated (labels.SelectorFromValidatedSet gives the same requirements).
func (b *builder) selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil || len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
		return selectorOf(ls) // Nothing, Everything
	}
	sb := &b.selSig
	sb.reset()
	sb.labelSelector(ls)
	if sel, ok := b.selectors[string(sb.b)]; ok {
		return sel, nil
	}
	key := string(sb.b)
	sel, err := parseSelector(ls)
	if err != nil {
		return nil, err
	}
	b.selectors[key] = sel
	return sel, nil
}

// selectorOf parses a label selector as builder.selector does, without its cache.
func selectorOf(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
		return labels.Everything(), nil
	}
	return parseSelector(ls)
}

// parseSelector converts a label selector with at least one requirement (validated by the API
// server: its matchLabels need no validation again).
func parseSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if len(ls.MatchExpressions) == 0 {
		return labels.SelectorFromValidatedSet(ls.MatchLabels), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}
