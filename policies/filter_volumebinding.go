package policies

import (
	"fmt"

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
