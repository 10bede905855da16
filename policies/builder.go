package policies

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	reqByContainers map[*corev1.Container]resources
	sig, selSig     sigBuf
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
		reqByContainers: map[*corev1.Container]resources{},
	}
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

// affinityID returns the id of p's nodeSelector and required node affinity (what
// nodeaffinity.GetRequiredNodeAffinity reads), building its node mask and zone list on first
// sight.
func (b *builder) affinityID(p *corev1.Pod, template bool) int32 {
	m := b.m
	x := &b.ids
	memo := template && p.Spec.Affinity != nil && len(p.Spec.NodeSelector) == 0
	if memo {
		if id, ok := x.affByPtr[p.Spec.Affinity]; ok {
			return id
		}
	}
	sb := &b.sig
	sb.reset()
	sb.nodeAffinity(p)
	id, fresh := x.intern(sb.b)
	if fresh {
		// The entry is shared by every worker (one mask per distinct node affinity).
		m.sharedMu.Lock()
		e := m.sharedAffinity[string(sb.b)]
		if e == nil {
			e = &affinityEntry{mask: m.nodeAffinityMask(p)}
			e.zoneList, e.zoneKey, e.listed = zoneList(p)
			m.sharedAffinity[string(sb.b)] = e
		}
		m.sharedMu.Unlock()
		x.affinity[id] = e
	}
	if memo {
		x.affByPtr[p.Spec.Affinity] = id
	}
	return id
}

// tolerationsID returns the id of p's tolerations, building the taint mask on first sight:
// per node, whether p tolerates every NoSchedule and NoExecute taint (TaintToleration's
// FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc).
func (b *builder) tolerationsID(p *corev1.Pod, template bool) int32 {
	m := b.m
	x := &b.ids
	ts := p.Spec.Tolerations
	memo := template && len(ts) > 0
	if memo {
		if id, ok := x.tolByPtr[&ts[0]]; ok {
			return id
		}
	}
	sb := &b.sig
	sb.reset()
	sb.tolerations(ts)
	id, fresh := x.intern(sb.b)
	if fresh {
		// The mask is shared by every worker (one per distinct set of tolerations).
		m.sharedMu.Lock()
		mask := m.sharedTaints[string(sb.b)]
		if mask == nil {
			mask = m.taintMask(ts)
			m.sharedTaints[string(sb.b)] = mask
		}
		m.sharedMu.Unlock()
		x.taints[id] = mask
	}
	if memo {
		x.tolByPtr[&ts[0]] = id
	}
	return id
}

// constraintID returns the id of a topology spread constraint's content.
func (b *builder) constraintID(tsc *corev1.TopologySpreadConstraint, template bool) int32 {
	x := &b.ids
	if template {
		if id, ok := x.tscByPtr[tsc]; ok {
			return id
		}
	}
	sb := &b.sig
	sb.reset()
	sb.tag('S')
	sb.num(int64(tsc.MaxSkew))
	sb.str(tsc.TopologyKey)
	sb.str(string(tsc.WhenUnsatisfiable))
	sb.labelSelector(tsc.LabelSelector)
	sb.optInt32(tsc.MinDomains)
	sb.strs(tsc.MatchLabelKeys)
	sb.optPolicy(tsc.NodeAffinityPolicy)
	sb.optPolicy(tsc.NodeTaintsPolicy)
	id, _ := x.intern(sb.b)
	if template {
		x.tscByPtr[tsc] = id
	}
	return id
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
	if ls == nil {
		return labels.Nothing(), nil
	}
	if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
		return labels.Everything(), nil
	}
	sb := &b.selSig
	sb.reset()
	sb.labelSelector(ls)
	if sel, ok := b.selectors[string(sb.b)]; ok {
		return sel, nil
	}
	key := string(sb.b)
	var sel labels.Selector
	if len(ls.MatchExpressions) == 0 {
		sel = labels.SelectorFromValidatedSet(ls.MatchLabels)
	} else {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(ls); err != nil {
			return nil, err
		}
	}
	b.selectors[key] = sel
	return sel, nil
}
