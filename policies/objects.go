package policies

import (
	"iter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Object is an API object of a Snapshot: its object metadata and its runtime form, as client-go's
// fake clientset, an encoder or a printer take it (controller-runtime's client.Object is the
// same pair).
type Object interface {
	metav1.Object
	runtime.Object
}

// The group, version and kind of each list of a Snapshot.
var (
	namespaceKind             = corev1.SchemeGroupVersion.WithKind("Namespace")
	nodeKind                  = corev1.SchemeGroupVersion.WithKind("Node")
	persistentVolumeKind      = corev1.SchemeGroupVersion.WithKind("PersistentVolume")
	persistentVolumeClaimKind = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	csiNodeKind               = storagev1.SchemeGroupVersion.WithKind("CSINode")
	statefulSetKind           = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	podDisruptionBudgetKind   = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")
	podKind                   = corev1.SchemeGroupVersion.WithKind("Pod")
	serviceKind               = corev1.SchemeGroupVersion.WithKind("Service")
)

// Objects walks every object of the snapshot with its group, version and kind, one kind after
// another, cluster-scoped kinds first: Namespaces, Nodes, PersistentVolumes, CSINodes,
// PersistentVolumeClaims, StatefulSets, PodDisruptionBudgets, Services, Pods, each in the
// snapshot's order.
// It yields the snapshot's own objects, not copies, and leaves their TypeMeta as it is (a trimmed
// or listed object usually has none): the kind is the one yielded beside it.
func (s *Snapshot) Objects() iter.Seq2[schema.GroupVersionKind, Object] {
	return func(yield func(schema.GroupVersionKind, Object) bool) {
		_ = each(yield, namespaceKind, s.Namespaces) &&
			each(yield, nodeKind, s.Nodes) &&
			each(yield, persistentVolumeKind, s.PersistentVolumes) &&
			each(yield, csiNodeKind, s.CSINodes) &&
			each(yield, persistentVolumeClaimKind, s.PersistentVolumeClaims) &&
			each(yield, statefulSetKind, s.StatefulSets) &&
			each(yield, podDisruptionBudgetKind, s.PodDisruptionBudgets) &&
			each(yield, serviceKind, s.Services) &&
			each(yield, podKind, s.Pods)
	}
}

// each yields gvk with every object of objs, and reports whether the walk goes on.
func each[T Object](yield func(schema.GroupVersionKind, Object) bool, gvk schema.GroupVersionKind, objs []T) bool {
	for _, o := range objs {
		if !yield(gvk, o) {
			return false
		}
	}
	return true
}
