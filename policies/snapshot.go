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
	// Nodes are every node of the cluster (the topology domains come from their labels).
	Nodes []*corev1.Node
	// Pods are every pod the rules may count: a spread constraint counts matching pods of any
	// workload in its namespace, and pod anti-affinity may come from any namespace.
	Pods []*corev1.Pod
	// StatefulSets give N (their spec.replicas) and the templates evicted pods are re-created from.
	StatefulSets []*appsv1.StatefulSet
	// PodDisruptionBudgets are reported per cluster (the executor's dry-run eviction enforces them).
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// PersistentVolumeClaims and PersistentVolumes give the volume topology of the pods' claims.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	// Namespaces, when given, supply the labels a pod affinity term's namespaceSelector is matched
	// against; without them a namespace is assumed to carry only the kubernetes.io/metadata.name
	// label the API server sets.
	Namespaces []*corev1.Namespace
}
