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
	// Without matchFields only the node's labels are read: each node is matched as a node with
	// its labels and no name, for which the matcher builds no field set.
	byFields := false
	if ns := requiredNodeAffinity(p); ns != nil {
		for k := range ns.NodeSelectorTerms {
			byFields = byFields || len(ns.NodeSelectorTerms[k].MatchFields) > 0
		}
	}
	mask := make([]bool, len(m.Nodes))
	var bare corev1.Node
	for i, n := range m.Nodes {
		if byFields {
			mask[i], _ = req.Match(n.Obj)
			continue
		}
		bare.Labels = n.Obj.Labels
		mask[i], _ = req.Match(&bare)
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
