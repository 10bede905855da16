package policies

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// volumeTopologyLabels are the node labels VolumeZone compares with a PersistentVolume's labels.
var volumeTopologyLabels = []string{LabelZoneLegacy, corev1.LabelFailureDomainBetaRegion, LabelZone, corev1.LabelTopologyRegion}

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
