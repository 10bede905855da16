package policies

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	volumehelper "k8s.io/component-helpers/storage/volume"
)

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

// restrictsNodes reports whether a PersistentVolume restricts the nodes its pods may run on: it
// has required node affinity (VolumeBinding) or zone and region labels (VolumeZone), as pvMask
// reads them.
func restrictsNodes(pv *corev1.PersistentVolume) bool {
	if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
		return true
	}
	for _, k := range volumeTopologyLabels {
		if _, ok := pv.Labels[k]; ok {
			return true
		}
	}
	return false
}

// findClaims records, for every member re-created from its StatefulSet's template, the claims
// whose bound PersistentVolume restricts where it may run, and whether its StatefulSet
// re-creates each of them (a claim of a volumeClaimTemplate is named "<template>-<pod>" and
// mounted as the template's name, as the StatefulSet controller's getPersistentVolumeClaims
// names it). A claim the StatefulSet does not re-create is never released: its pod would stay
// Pending.
func (c *Cluster) findClaims() {
	m := c.model
	for _, mem := range c.Members {
		p := mem.Pod // its Template's name and namespace
		for v := range templateVolumes(mem) {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			name := v.PersistentVolumeClaim.ClaimName
			pvc := m.pvcs[p.Namespace+"/"+name]
			if pvc == nil || pvc.Spec.VolumeName == "" {
				continue
			}
			pv := m.pvs[pvc.Spec.VolumeName]
			if pv == nil || !restrictsNodes(pv) {
				continue
			}
			switch {
			case mem.claimWhy != "":
			case mem.sts == nil:
				mem.claimWhy = fmt.Sprintf("its owner %s is not a StatefulSet: nothing re-creates claim %s", ownerText(mem.Owner), name)
			case !fromTemplate(mem.sts, v.Name, name, p.Name):
				mem.claimWhy = fmt.Sprintf("claim %s is not one of StatefulSet %s's volumeClaimTemplates: nothing would re-create it", name, mem.sts.Name)
			default:
				mem.claims = append(mem.claims, name)
			}
		}
		if mem.claimWhy != "" {
			mem.claims = nil
		}
	}
}

// ownerText names a member's owner ("Kind/name"), or says it has none.
func ownerText(owner string) string {
	if owner == "" {
		return "(none)"
	}
	return owner
}

// fromTemplate reports whether the pod volume named volume, of claim claim, is one sts re-creates
// for pod from a volumeClaimTemplate.
func fromTemplate(sts *appsv1.StatefulSet, volume, claim, pod string) bool {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == volume && claim == t.Name+"-"+pod {
			return true
		}
	}
	return false
}

// ClaimsReleasable reports whether member i's claims may be released when it moves
// (Options.ReleaseReplicaClaims): it is re-created from its template (not a Pending pod), a
// claim bound to a PersistentVolume that restricts its nodes keeps it there, its StatefulSet
// re-creates every such claim, and it is a replica when it is evicted: a replica now, or a master
// serving slots, which a move fails over first. A master without slots (evicted as a master) and
// a member whose role is unknown keep their claims. The filter ignores the volume topology of
// such a member; VolumesAllow tells where it may run with its claims kept.
func (c *Cluster) ClaimsReleasable(i int) bool {
	mem := c.Members[i]
	return c.model.Options.ReleaseReplicaClaims && len(mem.claims) > 0 && !mem.pending() &&
		(mem.Role == RoleReplica || mem.Role == RoleMaster && !mem.EmptyMaster)
}

// ReleasableClaims returns the names of member i's claims that keep it where their
// PersistentVolumes are, when every one of them may be released (ClaimsReleasable: the executor
// deletes them after the eviction, and the StatefulSet re-creates them empty), nil otherwise.
func (c *Cluster) ReleasableClaims(i int) []string {
	if !c.ClaimsReleasable(i) {
		return nil
	}
	return c.Members[i].claims
}

// ClaimsKept says why member i's claims that keep it where their PersistentVolumes are may not be
// released ("" when none restricts it, or they may be).
func (c *Cluster) ClaimsKept(i int) string {
	mem := c.Members[i]
	switch {
	case mem.claimWhy != "":
		return mem.claimWhy
	case len(mem.claims) == 0, c.ClaimsReleasable(i):
		return ""
	case !c.model.Options.ReleaseReplicaClaims:
		return "releasing claims is off (--release-replica-claims)"
	case mem.pending():
		return "a Pending pod is placed with its own claims"
	case mem.Role == RoleMaster:
		return "a master serving no slot is evicted as a master, and a master's claim is never released"
	}
	return "its Redis role is unknown, and only a replica's claim is released"
}

// VolumesAllow reports whether member i, re-created (or, Pending, placed as it is), may run on
// node n with its claims kept: every bound PersistentVolume of its claims allows the node
// (VolumeBinding, VolumeZone).
func (c *Cluster) VolumesAllow(i, n int) bool {
	s := c.Members[i].incoming()
	return s.volume == nil || s.volume[n] == fitOK
}
