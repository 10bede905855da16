package policies

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"
	deschedulerutils "sigs.k8s.io/descheduler/pkg/utils"
)

// podSpec is a pod's scheduling-relevant spec, converted once: which spread-constraint instances
// it carries, its inter-pod affinity terms, and which nodes it may use regardless of other pods.
type podSpec struct {
	pod      *corev1.Pod
	labels   labels.Set
	spread   []int // indices into Cluster.spread (DoNotSchedule)
	soft     []int // indices into Cluster.soft (ScheduleAnyway)
	anti     []affinityTerm
	affinity []affinityTerm
	// static[n] is 0 when node n passes the checks that do not depend on the other members
	// (unschedulable, taints, node affinity and nodeSelector, external pods' anti-affinity),
	// otherwise the reason code of the first failing check.
	static []reasonCode
	// volume[n] is false when a bound PersistentVolume's node affinity excludes node n (nil: no
	// restriction).
	volume   []bool
	requests resources
}

// reasonCode names why a node does not fit; the text mirrors kube-scheduler's messages.
type reasonCode uint8

const (
	fitOK reasonCode = iota
	reasonUnschedulable
	reasonTaint
	reasonNodeAffinity
	reasonExternalAntiAffinity
	reasonVolume
	reasonSpread
	reasonSpreadMissingLabel
	reasonAntiAffinity
	reasonAffinity
	reasonResources
)

var reasonText = map[reasonCode]string{
	reasonUnschedulable:        "node(s) were unschedulable",
	reasonTaint:                "node(s) had untolerated taint",
	reasonNodeAffinity:         "node(s) didn't match Pod's node affinity/selector",
	reasonExternalAntiAffinity: "node(s) didn't match pod anti-affinity rules (other pods)",
	reasonVolume:               "node(s) had volume node affinity conflict",
	reasonSpread:               "node(s) didn't match pod topology spread constraints",
	reasonSpreadMissingLabel:   "node(s) didn't match pod topology spread constraints (missing required label)",
	reasonAntiAffinity:         "node(s) didn't match pod anti-affinity rules",
	reasonAffinity:             "node(s) didn't match pod affinity rules",
	reasonResources:            "node(s) had insufficient resources",
}

// affinityTerm is a required (anti-)affinity term with its selector parsed.
type affinityTerm struct {
	selector   labels.Selector
	namespaces sets.Set[string] // nil: all namespaces
	key        string
	// external holds the domain ids (of key) where a non-member pod matches the term.
	external map[int]bool
}

func (t *affinityTerm) matches(p *corev1.Pod) bool {
	if t.namespaces != nil && !t.namespaces.Has(p.Namespace) {
		return false
	}
	return t.selector.Matches(labels.Set(p.Labels))
}

// spreadInstance is one topology spread constraint as kube-scheduler's PodTopologySpread plugin
// sees it for one incoming pod (its internal topologySpreadConstraint plus the PreFilter state
// that does not depend on the cluster's members): the eligible nodes, their domains, and the
// matching pods that are not members of the cluster.
type spreadInstance struct {
	constraint corev1.TopologySpreadConstraint
	hard       bool
	selector   labels.Selector
	maxSkew    int
	minDomains int
	dom        *domainIndex
	// eligible[n]: node n counts (it has every topology key of the pod's constraints with the
	// same whenUnsatisfiable, and passes nodeAffinityPolicy/nodeTaintsPolicy).
	eligible []bool
	// numDomains is the number of distinct domains among eligible nodes.
	numDomains int
	// external[d] counts matching, scheduled, non-terminating pods in the namespace that are not
	// members of the cluster, on eligible nodes of domain d.
	external map[int]int
	// matches[i] reports whether member i's labels match the selector.
	matches []bool
}

// buildSpecs converts every member's current pod and re-creation template once.
func (c *Cluster) buildSpecs() error {
	seen := map[string]int{}
	softSeen := map[string]int{}
	members := map[*corev1.Pod]bool{}
	for _, mem := range c.Members {
		members[mem.Pod] = true
	}
	for _, mem := range c.Members {
		var err error
		if mem.cur, err = c.newPodSpec(mem.Pod, members, seen, softSeen); err != nil {
			return fmt.Errorf("pod %s: %w", mem.Key(), err)
		}
		if mem.Template == mem.Pod {
			mem.next = mem.cur
		} else if mem.next, err = c.newPodSpec(mem.Template, members, seen, softSeen); err != nil {
			return fmt.Errorf("template of pod %s: %w", mem.Key(), err)
		}
	}
	for _, in := range append(append([]*spreadInstance(nil), c.spread...), c.soft...) {
		in.matches = make([]bool, len(c.Members))
		for i, mem := range c.Members {
			in.matches[i] = in.selector.Matches(labels.Set(mem.Pod.Labels))
		}
	}
	return nil
}

func (c *Cluster) newPodSpec(p *corev1.Pod, members map[*corev1.Pod]bool, seen, softSeen map[string]int) (*podSpec, error) {
	m := c.model
	s := &podSpec{pod: p, labels: labels.Set(p.Labels), requests: requestsOf(p)}
	for _, action := range []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway} {
		var keys []string
		for _, tsc := range p.Spec.TopologySpreadConstraints {
			if tsc.WhenUnsatisfiable == action {
				keys = append(keys, tsc.TopologyKey)
			}
		}
		for _, tsc := range p.Spec.TopologySpreadConstraints {
			if tsc.WhenUnsatisfiable != action {
				continue
			}
			if action == corev1.DoNotSchedule {
				idx, err := c.spreadInstanceFor(p, tsc, keys, members, seen, &c.spread)
				if err != nil {
					return nil, err
				}
				s.spread = append(s.spread, idx)
			} else {
				idx, err := c.spreadInstanceFor(p, tsc, keys, members, softSeen, &c.soft)
				if err != nil {
					return nil, err
				}
				s.soft = append(s.soft, idx)
			}
		}
	}
	if a := p.Spec.Affinity; a != nil {
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				at, err := c.newAffinityTerm(p, t, members)
				if err != nil {
					return nil, err
				}
				s.anti = append(s.anti, at)
			}
		}
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				at, err := c.newAffinityTerm(p, t, members)
				if err != nil {
					return nil, err
				}
				s.affinity = append(s.affinity, at)
			}
		}
	}
	// Static checks per node.
	affinity := m.nodeAffinityMask(p)
	taints := m.taintMask(p)
	s.static = make([]reasonCode, len(m.Nodes))
	for i, n := range m.Nodes {
		switch {
		case n.Obj.Spec.Unschedulable && !toleratesUnschedulable(p):
			s.static[i] = reasonUnschedulable
		case !taints[i]:
			s.static[i] = reasonTaint
		case !affinity[i]:
			s.static[i] = reasonNodeAffinity
		}
	}
	// Anti-affinity of pods that are not members, against this pod (the symmetric half of
	// kube-scheduler's InterPodAffinity filter).
	for _, other := range m.antiAffinePods {
		if members[other] {
			continue
		}
		oi := m.NodeIndex(other.Spec.NodeName)
		for _, t := range other.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			at, err := newTerm(other, t)
			if err != nil || !at.matches(p) {
				continue
			}
			d := m.domain(t.TopologyKey)
			if d.ofNode[oi] < 0 {
				continue
			}
			for i := range m.Nodes {
				if d.ofNode[i] == d.ofNode[oi] && s.static[i] == fitOK {
					s.static[i] = reasonExternalAntiAffinity
				}
			}
		}
	}
	vol, err := m.volumeMask(p)
	if err != nil {
		return nil, err
	}
	s.volume = vol
	return s, nil
}

// spreadInstanceFor builds the instance of constraint tsc for incoming pod p, mirroring
// kube-scheduler's filterTopologySpreadConstraints and calPreFilterState: matchLabelKeys merged
// into the selector, minDomains defaulting to 1, nodeAffinityPolicy Honor and nodeTaintsPolicy
// Ignore by default, nodes lacking any key of the same-action constraints skipped.
//
// seen maps instance signatures to indices of *list; an instance with the same signature is
// reused. It returns the instance's index in *list.
func (c *Cluster) spreadInstanceFor(p *corev1.Pod, tsc corev1.TopologySpreadConstraint, keys []string, members map[*corev1.Pod]bool, seen map[string]int, list *[]*spreadInstance) (int, error) {
	m := c.model
	sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
	if err != nil {
		return 0, fmt.Errorf("topologySpreadConstraint %s: %w", tsc.TopologyKey, err)
	}
	if tsc.LabelSelector == nil {
		sel = labels.Nothing() // kube-scheduler: a nil selector matches no pod
	}
	matchLabels := map[string]string{}
	for _, k := range tsc.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			matchLabels[k] = v
		}
	}
	if len(matchLabels) > 0 {
		merged := labels.SelectorFromSet(matchLabels)
		if reqs, ok := sel.Requirements(); ok {
			merged = merged.Add(reqs...)
		}
		sel = merged
	}
	affinityPolicy := ptr.Deref(tsc.NodeAffinityPolicy, corev1.NodeInclusionPolicyHonor)
	taintsPolicy := ptr.Deref(tsc.NodeTaintsPolicy, corev1.NodeInclusionPolicyIgnore)
	sig := struct {
		NS       string
		C        corev1.TopologySpreadConstraint
		Sel      string
		Keys     []string
		Affinity any
		Tol      any
	}{NS: p.Namespace, C: tsc, Sel: sel.String(), Keys: keys}
	sig.C.MatchLabelKeys = nil
	if affinityPolicy == corev1.NodeInclusionPolicyHonor {
		sig.Affinity = []any{p.Spec.NodeSelector, requiredNodeAffinity(p)}
	}
	if taintsPolicy == corev1.NodeInclusionPolicyHonor {
		sig.Tol = p.Spec.Tolerations
	}
	b, _ := json.Marshal(sig)
	key := string(b)
	if i, ok := seen[key]; ok {
		return i, nil
	}
	in := &spreadInstance{
		constraint: tsc,
		hard:       tsc.WhenUnsatisfiable == corev1.DoNotSchedule,
		selector:   sel,
		maxSkew:    int(tsc.MaxSkew),
		minDomains: int(ptr.Deref(tsc.MinDomains, 1)),
		dom:        m.domain(tsc.TopologyKey),
		eligible:   make([]bool, len(m.Nodes)),
		external:   map[int]int{},
	}
	var affinity, taints []bool
	if affinityPolicy == corev1.NodeInclusionPolicyHonor {
		affinity = m.nodeAffinityMask(p)
	}
	if taintsPolicy == corev1.NodeInclusionPolicyHonor {
		taints = m.taintMask(p)
	}
	domainSeen := map[int]bool{}
	for i, n := range m.Nodes {
		ok := true
		for _, k := range keys {
			if _, has := n.Obj.Labels[k]; !has {
				ok = false
				break
			}
		}
		if ok && affinity != nil && !affinity[i] {
			ok = false
		}
		if ok && taints != nil && !taints[i] {
			ok = false
		}
		in.eligible[i] = ok
		if ok {
			domainSeen[in.dom.ofNode[i]] = true
		}
	}
	in.numDomains = len(domainSeen)
	for _, op := range m.podsByNamespace[p.Namespace] {
		if members[op] || op.DeletionTimestamp != nil || op.Spec.NodeName == "" || isFinished(op) {
			continue
		}
		ni := m.NodeIndex(op.Spec.NodeName)
		if ni < 0 || !in.eligible[ni] || !sel.Matches(labels.Set(op.Labels)) {
			continue
		}
		in.external[in.dom.ofNode[ni]]++
	}
	seen[key] = len(*list)
	*list = append(*list, in)
	return len(*list) - 1, nil
}

func (c *Cluster) newAffinityTerm(p *corev1.Pod, t corev1.PodAffinityTerm, members map[*corev1.Pod]bool) (affinityTerm, error) {
	at, err := newTerm(p, t)
	if err != nil {
		return at, err
	}
	m := c.model
	d := m.domain(t.TopologyKey)
	at.external = map[int]bool{}
	for ni, pods := range m.podsByNode {
		if d.ofNode[ni] < 0 {
			continue
		}
		for _, op := range pods {
			if !members[op] && at.matches(op) {
				at.external[d.ofNode[ni]] = true
				break
			}
		}
	}
	return at, nil
}

// newTerm parses a pod (anti-)affinity term of pod p: its label selector with matchLabelKeys and
// mismatchLabelKeys applied, and its namespaces (the pod's own when none are listed; all with an
// empty namespaceSelector). A non-empty namespaceSelector cannot be evaluated without Namespace
// objects; only the listed namespaces are used then.
func newTerm(p *corev1.Pod, t corev1.PodAffinityTerm) (affinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return affinityTerm{}, fmt.Errorf("pod affinity term %s: %w", t.TopologyKey, err)
	}
	if t.LabelSelector == nil {
		sel = labels.Nothing()
	}
	for _, k := range t.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "in", []string{v})
			if err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "notin", []string{v})
			if err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	at := affinityTerm{selector: sel, key: t.TopologyKey}
	if t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0 {
		return at, nil // all namespaces
	}
	at.namespaces = deschedulerutils.GetNamespacesFromPodAffinityTerm(p, &t)
	return at, nil
}

func requiredNodeAffinity(p *corev1.Pod) *corev1.NodeSelector {
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// nodeAffinityMask returns, per node, whether p's nodeSelector and required node affinity match
// (cached by their content).
func (m *Model) nodeAffinityMask(p *corev1.Pod) []bool {
	b, _ := json.Marshal([]any{"affinity", p.Spec.NodeSelector, requiredNodeAffinity(p)})
	key := string(b)
	if mask, ok := m.masks[key]; ok {
		return mask
	}
	req := nodeaffinity.GetRequiredNodeAffinity(p)
	mask := make([]bool, len(m.Nodes))
	for i, n := range m.Nodes {
		ok, _ := req.Match(n.Obj)
		mask[i] = ok
	}
	m.masks[key] = mask
	return mask
}

// taintMask returns, per node, whether p tolerates every NoSchedule and NoExecute taint (cached by
// the tolerations).
func (m *Model) taintMask(p *corev1.Pod) []bool {
	b, _ := json.Marshal([]any{"taints", p.Spec.Tolerations})
	key := string(b)
	if mask, ok := m.masks[key]; ok {
		return mask
	}
	mask := make([]bool, len(m.Nodes))
	for i, n := range m.Nodes {
		mask[i] = deschedulerutils.TolerationsTolerateTaintsWithFilter(context.Background(), p.Spec.Tolerations, n.Obj.Spec.Taints, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		})
	}
	m.masks[key] = mask
	return mask
}

// toleratesUnschedulable mirrors kube-scheduler's NodeUnschedulable plugin: a pod tolerating the
// node.kubernetes.io/unschedulable:NoSchedule taint may use a cordoned node.
func toleratesUnschedulable(p *corev1.Pod) bool {
	taint := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	return deschedulerutils.TolerationsTolerateTaint(context.Background(), p.Spec.Tolerations, taint)
}

// volumeMask returns, per node, whether every bound PersistentVolume of p's claims allows the node
// (its spec.nodeAffinity, as VolumeBinding checks for bound claims); nil when no claim restricts.
func (m *Model) volumeMask(p *corev1.Pod) ([]bool, error) {
	var mask []bool
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := m.pvcs[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]
		if pvc == nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pv := m.pvs[pvc.Spec.VolumeName]
		if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
		if err != nil {
			return nil, fmt.Errorf("persistentvolume %s node affinity: %w", pv.Name, err)
		}
		if mask == nil {
			mask = make([]bool, len(m.Nodes))
			for i := range mask {
				mask[i] = true
			}
		}
		for i, n := range m.Nodes {
			if mask[i] && !sel.Match(n.Obj) {
				mask[i] = false
			}
		}
	}
	return mask, nil
}
