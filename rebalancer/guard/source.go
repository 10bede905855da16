package guard

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Source is the watched cache the guard answers from: no request reaches the API server while
// it answers a review. serve's watched cache (rebalancer/cache's *Cache) implements it.
type Source interface {
	// Pod returns the pod namespace/name as last watched.
	Pod(namespace, name string) (*corev1.Pod, bool)
	// Node returns the node as last watched (its Ready condition, spec.unschedulable and
	// taints at least).
	Node(name string) (*corev1.Node, bool)
	// StatefulSet returns the StatefulSet namespace/name as last watched (its pod template's
	// labels at least): whether a pod's StatefulSet is a Redis workload.
	StatefulSet(namespace, name string) (*appsv1.StatefulSet, bool)
	// ClusterPods returns the pods of namespace whose cluster label (the policy's
	// selection.clusterLabel) has the value cluster.
	ClusterPods(namespace, cluster string) []*corev1.Pod
	// Clusters returns the keys ("namespace/cluster") of every Redis cluster it holds pods of.
	Clusters() []string
	// Nodes returns every node.
	Nodes() []*corev1.Node
}

// NodeReady reports whether node is Ready and reachable: its Ready condition is True and it has
// neither the node.kubernetes.io/unreachable nor the node.kubernetes.io/not-ready taint (the node
// lifecycle controller's). When not, it says why. A node missing from the cache is not Ready.
func NodeReady(node *corev1.Node) (bool, string) {
	if node == nil {
		return false, "node not found"
	}
	if tainted, why := NodeTaintedNotReady(node); tainted {
		return false, why
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return true, ""
			}
			return false, "Ready condition " + string(c.Status)
		}
	}
	return false, "no Ready condition"
}

// NodeTaintedNotReady reports whether node carries the node lifecycle controller's
// node.kubernetes.io/unreachable or node.kubernetes.io/not-ready taint, and which: what tells a
// node that is not Ready from a model whose nodes are trimmed of their conditions.
func NodeTaintedNotReady(node *corev1.Node) (bool, string) {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady {
			return true, "taint " + t.Key
		}
	}
	return false, ""
}
