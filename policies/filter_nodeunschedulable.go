package policies

import (
	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// toleratesUnschedulable is NodeUnschedulable's Filter: a cordoned node (spec.unschedulable)
// rejects a pod unless the pod tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.
// staticMask applies it to every node.
func toleratesUnschedulable(p *corev1.Pod) bool {
	return v1helper.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations,
		&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false)
}
