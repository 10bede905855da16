package policies

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	volumehelper "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
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
			req := nodeaffinity.GetRequiredNodeAffinity(p)
			e = &affinityEntry{mask: make([]bool, len(m.Nodes))}
			for i, n := range m.Nodes {
				// Parse errors do not match, as in the NodeAffinity filter.
				e.mask[i], _ = req.Match(n.Obj)
			}
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
			mask = make([]bool, len(m.Nodes))
			logger := klog.Background()
			for i, n := range m.Nodes {
				if len(n.Obj.Spec.Taints) == 0 {
					mask[i] = true
					continue
				}
				_, untolerated := v1helper.FindMatchingUntoleratedTaint(logger, n.Obj.Spec.Taints, ts, doNotScheduleTaint, false)
				mask[i] = !untolerated
			}
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

// doNotScheduleTaint is kube-scheduler's helper.DoNotScheduleTaintsFilterFunc.
func doNotScheduleTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// staticMask returns the node-level checks of a pod with node affinity aff and tolerations tol,
// in kube-scheduler's filter order: NodeUnschedulable (a cordoned node, unless the pod tolerates
// node.kubernetes.io/unschedulable:NoSchedule), TaintToleration, NodeAffinity.
func (b *builder) staticMask(p *corev1.Pod, aff, tol int32) []reasonCode {
	m := b.m
	x := &b.ids
	k := [2]int32{aff, tol}
	if mask, ok := x.statics[k]; ok {
		return mask
	}
	affinity := x.affinity[aff].mask
	taints := x.taints[tol]
	cordonOK := v1helper.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations,
		&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false)
	mask := make([]reasonCode, len(m.Nodes))
	for i, n := range m.Nodes {
		switch {
		case n.Obj.Spec.Unschedulable && !cordonOK:
			mask[i] = reasonUnschedulable
		case !taints[i]:
			mask[i] = reasonTaint
		case !affinity[i]:
			mask[i] = reasonNodeAffinity
		}
	}
	x.statics[k] = mask
	return mask
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

// newTerm parses a pod (anti-)affinity term of pod p as kube-scheduler's newAffinityTerm does.
// For a template, matchLabelKeys and mismatchLabelKeys are merged into the selector as the API
// server does when it creates the pod (existing pods carry them merged already).
func (b *builder) newTerm(p *corev1.Pod, t *corev1.PodAffinityTerm, template bool) (*affinityTerm, error) {
	m := b.m
	sel, err := b.selector(t.LabelSelector)
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
	ns := sets.New(t.Namespaces...)
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		ns.Insert(p.Namespace)
	}
	at := &affinityTerm{selector: sel, namespaces: ns, nsSelector: nsSel, key: t.TopologyKey, dom: m.domain(t.TopologyKey)}
	if t.NamespaceSelector == nil {
		at.scope = sets.List(ns)
	}
	return at, nil
}

// volumeTopologyLabels are the node labels VolumeZone compares with a PersistentVolume's labels.
var volumeTopologyLabels = []string{LabelZoneLegacy, corev1.LabelFailureDomainBetaRegion, LabelZone, corev1.LabelTopologyRegion}

// volumeMask returns, per node, whether every bound PersistentVolume of p's claims allows the
// node: its spec.nodeAffinity (VolumeBinding's check of bound claims, volume.CheckNodeAffinity)
// and its zone and region labels (VolumeZone). nil when no claim restricts. Claims and volumes
// missing from the snapshot do not restrict.
func (b *builder) volumeMask(p *corev1.Pod) ([]reasonCode, error) {
	m := b.m
	var masks [][]reasonCode
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := m.pvcs[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]
		if pvc == nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pv := m.pvs[pvc.Spec.VolumeName]
		if pv == nil {
			continue
		}
		mask, err := b.pvMask(pv)
		if err != nil {
			return nil, err
		}
		if mask != nil {
			masks = append(masks, mask)
		}
	}
	switch len(masks) {
	case 0:
		return nil, nil
	case 1:
		return masks[0], nil
	}
	out := make([]reasonCode, len(m.Nodes))
	for _, mask := range masks {
		for i, r := range mask {
			if out[i] == fitOK {
				out[i] = r
			}
		}
	}
	return out, nil
}

// pvMask returns the nodes a PersistentVolume allows (nil: all), cached by its node affinity and
// topology labels.
func (b *builder) pvMask(pv *corev1.PersistentVolume) ([]reasonCode, error) {
	m := b.m
	var required *corev1.NodeSelector
	if pv.Spec.NodeAffinity != nil {
		required = pv.Spec.NodeAffinity.Required
	}
	sb := &b.sig
	sb.reset()
	sb.tag('V')
	sb.nodeSelector(required)
	zoned := false
	for _, k := range volumeTopologyLabels {
		if v, ok := pv.Labels[k]; ok {
			sb.str(k)
			sb.str(v)
			zoned = true
		}
	}
	if required == nil && !zoned {
		return nil, nil
	}
	if mask, ok := b.volumes[string(sb.b)]; ok {
		return mask, nil
	}
	key := string(sb.b)
	if required != nil {
		if _, err := nodeaffinity.NewNodeSelector(required); err != nil {
			return nil, fmt.Errorf("persistentvolume %s node affinity: %w", pv.Name, err)
		}
	}
	mask := make([]reasonCode, len(m.Nodes))
	// Fast path: one term with one `In` expression (a zonal or local disk), by domain.
	var fast *corev1.NodeSelectorRequirement
	if required != nil && len(required.NodeSelectorTerms) == 1 {
		t := &required.NodeSelectorTerms[0]
		if len(t.MatchFields) == 0 && len(t.MatchExpressions) == 1 && t.MatchExpressions[0].Operator == corev1.NodeSelectorOpIn {
			fast = &t.MatchExpressions[0]
		}
	}
	var allowed []bool
	var dom *domainIndex
	if fast != nil {
		dom = m.domain(fast.Key)
		allowed = make([]bool, len(dom.names))
		for id, name := range dom.names {
			for _, v := range fast.Values {
				if v == name {
					allowed[id] = true
				}
			}
		}
	}
	for i, n := range m.Nodes {
		if required != nil {
			ok := false
			if fast != nil {
				ok = dom.ofNode[i] >= 0 && allowed[dom.ofNode[i]]
			} else {
				ok = volumehelper.CheckNodeAffinity(pv, n.Obj.Labels) == nil
			}
			if !ok {
				mask[i] = reasonVolume
				continue
			}
		}
		if zoned && !volumeZoneFits(pv, n.Obj) {
			mask[i] = reasonVolumeZone
		}
	}
	b.volumes[key] = mask
	return mask, nil
}

// volumeZoneFits mirrors VolumeZone's Filter: a node with no zone or region label fits; otherwise
// each zone/region label of the PersistentVolume (a "__"-separated set of values) must contain
// the node's value of that label (a beta label also matched against the node's GA label).
func volumeZoneFits(pv *corev1.PersistentVolume, n *corev1.Node) bool {
	any := false
	for _, k := range volumeTopologyLabels {
		if _, ok := n.Labels[k]; ok {
			any = true
			break
		}
	}
	if !any {
		return true
	}
	for _, k := range volumeTopologyLabels {
		pvVal, ok := pv.Labels[k]
		if !ok {
			continue
		}
		v, ok := n.Labels[k]
		if !ok {
			switch k {
			case LabelZoneLegacy:
				v, ok = n.Labels[LabelZone]
			case corev1.LabelFailureDomainBetaRegion:
				v, ok = n.Labels[corev1.LabelTopologyRegion]
			}
		}
		if !ok {
			return false
		}
		found := false
		for _, z := range strings.Split(pvVal, "__") {
			if strings.TrimSpace(z) == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
