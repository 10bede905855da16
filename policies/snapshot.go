package policies

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// Snapshot is the state of a Kubernetes cluster that the rules are evaluated on: what
// `kubectl get nodes,pods,statefulsets,poddisruptionbudgets,pvc,pv -A` returns. Slices may be in
// any order; objects are read, never modified.
type Snapshot struct {
	Nodes                  []*corev1.Node
	Pods                   []*corev1.Pod
	StatefulSets           []*appsv1.StatefulSet
	PodDisruptionBudgets   []*policyv1.PodDisruptionBudget
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	// Namespaces, when given, supply the labels a pod affinity term's namespaceSelector is matched
	// against; without them a namespace is assumed to carry only the kubernetes.io/metadata.name
	// label the API server sets.
	Namespaces []*corev1.Namespace
}
