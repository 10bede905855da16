package policies

import (
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// podSpec is a pod's scheduling-relevant spec, converted once: which spread-constraint instances
// it carries, its inter-pod affinity terms, and which nodes it may use regardless of the
// cluster's members. The node masks are shared between every spec with the same tolerations and
// node affinity (model-level caches). What does not depend on the pod's labels, requests or
// volumes (*specCore) is shared by the specs derived from it (derivedSpec): a running pod's and
// its template's, the templates of one StatefulSet.
type podSpec struct {
	*specCore
	// pod is the pod converted: a running (or Pending) pod, or, while Build runs, a re-creation
	// template. A template's is dropped once its cluster is built (owner then builds it again on
	// demand): read it through podOf, or namespace.
	pod *corev1.Pod
	// owner is the member whose template the spec is, once pod is dropped (else nil).
	owner  *Member
	labels labels.Set
	// extAnti are the domains where a pod that is not a member of the cluster has a required
	// anti-affinity term matching this pod (InterPodAffinity's existing-pods check).
	extAnti []domainRef
	// volume[n] is fitOK when every bound PersistentVolume of the pod allows node n (VolumeBinding,
	// VolumeZone), otherwise the reason; nil when no volume restricts.
	volume []reasonCode
	// requests are NodeResourcesFit's basic amounts.
	requests resources
	// rare is set when the pod needs one of the plugins few pods need (rareSpec: scalar
	// resources, host ports, inline disks, ReadWriteOncePod claims, CSI volumes), whose state the
	// fitter counts member by member (fitter.addRare).
	rare bool
	// *rareSpec holds those plugins' parts: the shared empty noRare for the many pods that need
	// none, so that they cost a pointer.
	*rareSpec
}

// specCore is the part of a podSpec that newPodSpec sets once and derivedSpec shares: never
// changed once the spec is built.
type specCore struct {
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
	// zoneList and zoneKey: the zones the pod's node affinity lists (nil without a list) and the
	// zone key its constraints use ("" when none).
	zoneList []string
	zoneKey  string
}

// rareSpec is what a pod gives the plugins few pods need, and NodeName. Shared between specs, it
// is never changed once set (podSpec.setRare replaces it).
type rareSpec struct {
	// scalars are NodeResourcesFit's scalar resources (nil when none).
	scalars []scalarRequest
	// nodeName is the node a template names (NodeName), "" for none and for every running or
	// Pending pod.
	nodeName string
	// NodePorts: the pod's host ports (nil when none), and per node whether a non-member binds a
	// conflicting one (nil when none does anywhere).
	ports    []hostPort
	portMask []bool
	// VolumeRestrictions: the pod's inline disks (nil when none) and per node whether a
	// non-member uses one of them (nil when none does anywhere); its ReadWriteOncePod claims (nil
	// when none), and whether a non-member mounts one of them.
	disks     []corev1.Volume
	diskMask  []bool
	rwop      []string
	rwopInUse bool
	// csi are the volumes NodeVolumeLimits counts (nil when none, or when no node has a limit).
	csi []csiVolume
}

// podOf returns the pod the spec was converted from: a template's is built again on first use
// (Member.Template).
func (s *podSpec) podOf() *corev1.Pod {
	if s.pod != nil {
		return s.pod
	}
	return s.owner.Template()
}

// namespace returns the namespace of the spec's pod (a template's is its member's).
func (s *podSpec) namespace() string {
	if s.pod != nil {
		return s.pod.Namespace
	}
	return s.owner.Pod.Namespace
}

// noRare is the rareSpec of every spec that needs none of its plugins.
var noRare = &rareSpec{}

// setRare gives the spec r (noRare when r is empty) and sets podSpec.rare.
func (s *podSpec) setRare(r rareSpec) {
	s.rare = r.scalars != nil || r.ports != nil || r.disks != nil || r.rwop != nil || r.csi != nil
	if !s.rare && r.nodeName == "" {
		s.rareSpec = noRare
		return
	}
	s.rareSpec = new(rareSpec)
	*s.rareSpec = r
}

// usesCur reports whether member j, placed as p[j], runs with its current pod's spec: it stays on
// the node it is bound to, or it is a Pending pod the scheduler places. Otherwise (evicted and
// re-placed, terminating, lost with its node) it is re-created from its template.
func (c *Cluster) usesCur(j int, p Placement) bool {
	mem := c.Members[j]
	return mem.pending() || (p[j] >= 0 && p[j] == mem.Node && !mem.Terminating)
}

// specOf returns the spec in effect for member j under placement p (see usesCur).
func (c *Cluster) specOf(j int, p Placement) *podSpec {
	if c.usesCur(j, p) {
		return c.Members[j].cur
	}
	return c.Members[j].next
}

// buildSpecs converts every member's current pod and re-creation template once. The templates
// (templatePod) are built into the builder's scratch pods (builder.templatePods), which are
// reused for the next cluster: once every spec is built, no spec keeps a template's pod
// (podSpec.owner builds it again on demand), so that the model does not hold a pod per
// StatefulSet member.
func (c *Cluster) buildSpecs() error {
	seen := map[string]int{}
	c.terms = map[string]*affinityTerm{}
	byTemplate := map[*corev1.PodTemplateSpec]*podSpec{}
	var sibling *podSpec // a template spec of another shard: its parts are likely equal
	n := 0
	for _, mem := range c.Members {
		if mem.sts != nil {
			n++
		}
	}
	scratch := c.b.templatePods(n)
	defer clear(scratch) // what a stale pointer would read: nothing
	for _, mem := range c.Members {
		var err error
		req := podRequests{mem.req, c.model.podScalars[mem.Pod]}
		if mem.sts != nil {
			// The template first: its parts are memoized by address, and the running pod's parts
			// that equal them reuse their ids.
			tp := &scratch[0]
			scratch = scratch[1:]
			templatePod(tp, mem.Pod, mem.sts, nil)
			tmpl := &mem.sts.Spec.Template
			treq := c.b.templateRequests(tp)
			if first := byTemplate[tmpl]; first != nil && sameLabelKeys(tp, first.pod) {
				if mem.next, err = c.derivedSpec(tp, treq, first); err != nil {
					return fmt.Errorf("template of pod %s: %w", mem.Key(), err)
				}
			} else {
				if mem.next, err = c.newPodSpec(tp, treq, true, sibling, seen); err != nil {
					return fmt.Errorf("template of pod %s: %w", mem.Key(), err)
				}
				if first == nil {
					byTemplate[tmpl] = mem.next
				}
				sibling = mem.next
			}
		}
		if mem.next != nil && c.sameScheduling(mem.Pod, mem.next) {
			if mem.cur, err = c.derivedSpec(mem.Pod, req, mem.next); err != nil {
				return fmt.Errorf("pod %s: %w", mem.Key(), err)
			}
		} else if mem.cur, err = c.newPodSpec(mem.Pod, req, false, mem.next, seen); err != nil {
			return fmt.Errorf("pod %s: %w", mem.Key(), err)
		}
		if mem.next == nil {
			mem.next = mem.cur
		}
	}
	for _, mem := range c.Members {
		if mem.sts != nil {
			mem.next.pod, mem.next.owner = nil, mem
		}
	}
	for _, in := range c.spread {
		c.matchMembers(in)
	}
	return nil
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
	if !sameSpread(p, tp) {
		return false
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
	return sameVolumes(p, tp) && slices.Equal(hostPortsOf(p), t.ports)
}

// sameLabelKeys reports whether templates a and b of one StatefulSet carry the same values for
// every matchLabelKeys and mismatchLabelKeys of their (shared) spec: then they schedule alike.
func sameLabelKeys(a, b *corev1.Pod) bool {
	for k := range a.Spec.TopologySpreadConstraints {
		if !sameValues(a.Spec.TopologySpreadConstraints[k].MatchLabelKeys, a.Labels, b.Labels) {
			return false
		}
	}
	if x := a.Spec.Affinity; x != nil {
		if x.PodAffinity != nil && !sameTermValues(x.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.Labels, b.Labels) {
			return false
		}
		if x.PodAntiAffinity != nil && !sameTermValues(x.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.Labels, b.Labels) {
			return false
		}
	}
	return true
}

// sameTermValues reports whether labels a and b carry the same values for every matchLabelKeys
// and mismatchLabelKeys of terms.
func sameTermValues(terms []corev1.PodAffinityTerm, a, b map[string]string) bool {
	for k := range terms {
		if !sameValues(terms[k].MatchLabelKeys, a, b) || !sameValues(terms[k].MismatchLabelKeys, a, b) {
			return false
		}
	}
	return true
}

// derivedSpec returns the spec of pod p (requests req) that schedules exactly as spec t: a running
// pod as its template (sameScheduling), or a template as another template of its StatefulSet
// (sameLabelKeys). It is t's parts with p's labels, requests, host ports and volumes, and the
// anti-affinity of other pods against p's labels.
func (c *Cluster) derivedSpec(p *corev1.Pod, req podRequests, t *podSpec) (*podSpec, error) {
	s := *t
	s.pod = p
	s.labels = labels.Set(p.Labels)
	s.requests = req.resources
	r := *t.rareSpec
	r.scalars = req.scalars
	// The anti-affinity of other pods against p: t's when the labels agree on every key the terms
	// read (a template differs from its pod by its pod-name label, role labels, …).
	if !sameMap(s.labels, t.labels) && !sameValues(c.model.anti.keysFor(c.model, p.Namespace), s.labels, t.labels) {
		s.extAnti = c.model.anti.against(c, p)
	}
	if !sameContainers(p, t.pod) {
		c.portsOf(&r, p)
	}
	if !sameVolumes(p, t.pod) {
		if err := c.volumesOf(&s, &r, p); err != nil {
			return nil, err
		}
	}
	s.setRare(r)
	return &s, nil
}

// sameContainers reports whether a and b share their container lists.
func sameContainers(a, b *corev1.Pod) bool {
	x, y := a.Spec.Containers, b.Spec.Containers
	ix, iy := a.Spec.InitContainers, b.Spec.InitContainers
	return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0]) && len(ix) == len(iy) && (len(ix) == 0 || &ix[0] == &iy[0])
}

// portsOf sets the spec's host ports and the nodes where non-members bind conflicting ones
// (NodePorts).
func (c *Cluster) portsOf(r *rareSpec, p *corev1.Pod) {
	r.ports = hostPortsOf(p)
	r.portMask = nil
	if r.ports != nil {
		r.portMask = c.portMask(r.ports)
	}
}

// volumesOf sets what the spec's volumes restrict: the bound PersistentVolumes' node affinity
// and zone (VolumeBinding, VolumeZone), the inline disks and ReadWriteOncePod claims
// (VolumeRestrictions), and the volumes NodeVolumeLimits counts.
func (c *Cluster) volumesOf(s *podSpec, r *rareSpec, p *corev1.Pod) error {
	m := c.model
	var err error
	if s.volume, err = c.b.volumeMask(p); err != nil {
		return err
	}
	r.disks, r.diskMask = diskVolumesOf(p), nil
	if r.disks != nil {
		r.diskMask = c.diskMask(r.disks)
	}
	r.rwop, r.rwopInUse = m.readWriteOncePodClaims(p), false
	if r.rwop != nil {
		r.rwopInUse = c.claimInUse(p.Namespace, r.rwop)
	}
	r.csi = nil
	if m.csi != nil {
		r.csi = m.csiVolumesOf(p)
	}
	return nil
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
func (c *Cluster) newPodSpec(p *corev1.Pod, req podRequests, template bool, hint *podSpec, seen map[string]int) (*podSpec, error) {
	m := c.model
	s := &podSpec{specCore: &specCore{}, pod: p, labels: labels.Set(p.Labels), requests: req.resources}
	r := rareSpec{scalars: req.scalars}
	if template {
		r.nodeName = p.Spec.NodeName
	}
	if hint != nil && r.nodeName == hint.nodeName && equalTolerations(p.Spec.Tolerations, hint.pod.Spec.Tolerations) && equalNodeAffinity(p, hint.pod) {
		s.aff, s.tol = hint.aff, hint.tol
		s.static, s.affinityMask = hint.static, hint.affinityMask
	} else {
		s.aff = c.b.affinityID(p, template)
		s.tol = c.b.tolerationsID(p, template)
		s.affinityMask = c.b.ids.affinity[s.aff].mask
		s.static = c.b.staticMask(p, s.aff, s.tol, r.nodeName)
	}
	if hint != nil && s.aff == hint.aff && s.tol == hint.tol && sameSpread(p, hint.pod) {
		s.spread = hint.spread
	} else if err := c.spreadOf(p, s, template, seen); err != nil {
		return nil, err
	}
	if a := p.Spec.Affinity; a != nil {
		var err error
		if a.PodAntiAffinity != nil {
			if s.anti, err = c.termsFor(p, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, template, true); err != nil {
				return nil, err
			}
		}
		if a.PodAffinity != nil {
			if s.affinity, err = c.termsFor(p, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, template, false); err != nil {
				return nil, err
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
	if hint != nil && sameContainers(p, hint.pod) {
		r.ports, r.portMask = hint.ports, hint.portMask
	} else {
		c.portsOf(&r, p)
	}
	if err := c.volumesOf(s, &r, p); err != nil {
		return nil, err
	}
	s.setRare(r)
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
		if !sameValues(x[k].MatchLabelKeys, a.Labels, b.Labels) {
			return false
		}
	}
	return true
}

// sameValues reports whether labels a and b carry, for every key of keys, the same value or both
// none.
func sameValues(keys []string, a, b map[string]string) bool {
	for _, k := range keys {
		v, ok := a[k]
		w, ok2 := b[k]
		if ok != ok2 || v != w {
			return false
		}
	}
	return true
}
