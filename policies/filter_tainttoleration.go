package policies

import (
	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// taintMask is TaintToleration's Filter for every node: whether tolerations ts tolerate every
// NoSchedule and NoExecute taint of the node (v1helper.FindMatchingUntoleratedTaint with
// DoNotScheduleTaintsFilterFunc). Build computes it once per distinct set of tolerations
// (builder.tolerationsID); staticMask folds it into the node-level checks.
func (m *Model) taintMask(ts []corev1.Toleration) []bool {
	mask := make([]bool, len(m.Nodes))
	logger := klog.Background()
	for i, n := range m.Nodes {
		if len(n.Obj.Spec.Taints) == 0 {
			mask[i] = true
			continue
		}
		_, untolerated := v1helper.FindMatchingUntoleratedTaint(logger, n.Obj.Spec.Taints, ts, doNotScheduleTaint, false)
		mask[i] = !untolerated
	}
	return mask
}

// doNotScheduleTaint is kube-scheduler's helper.DoNotScheduleTaintsFilterFunc.
func doNotScheduleTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
