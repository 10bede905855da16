package policies

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// nodeAffinityMask is NodeAffinity's Filter for every node: whether p's nodeSelector and
// required node affinity (nodeaffinity.GetRequiredNodeAffinity) match the node. A term that does
// not parse does not match, as in the plugin. Build computes it once per distinct node affinity
// (builder.affinityID); staticMask folds it into the node-level checks.
func (m *Model) nodeAffinityMask(p *corev1.Pod) []bool {
	req := nodeaffinity.GetRequiredNodeAffinity(p)
	mask := make([]bool, len(m.Nodes))
	for i, n := range m.Nodes {
		mask[i], _ = req.Match(n.Obj)
	}
	return mask
}

// requiredNodeAffinity returns p's required node affinity, nil when it has none.
func requiredNodeAffinity(p *corev1.Pod) *corev1.NodeSelector {
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}
