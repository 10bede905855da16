package observe

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Source is where observations read the API server's objects from: LIST requests each time
// (Lister), or a watched cache kept up to date by informers (rebalancer/cache). Objects returned
// are trimmed (Trim) and shared: read them, never change them.
type Source interface {
	// Snapshot returns every node and PersistentVolume, and the pods, StatefulSets,
	// PodDisruptionBudgets and PersistentVolumeClaims of namespace ("" all), as ReadSnapshot.
	Snapshot(ctx context.Context, namespace string) (*policies.Snapshot, error)
	// Pods returns the pods of namespace ("" all) that selector matches (nil: every pod).
	Pods(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error)
}

// PodWaiter is a Source that may lag behind the API server (a watched cache): WaitForPod waits
// until it holds the pod as the caller read it from the API server, or a newer version of it.
type PodWaiter interface {
	// WaitForPod returns once the source holds a pod of p's namespace and name with p's UID and a
	// resourceVersion no older than p's, or another UID (p was replaced), or an error when ctx
	// ends first.
	WaitForPod(ctx context.Context, p *corev1.Pod) error
}

// Lister is the Source that lists from the API server on every call: each resource once per
// snapshot, in pages of PageSize objects (DefaultPageSize when 0; negative: one request).
type Lister struct {
	Client   kubernetes.Interface
	PageSize int64
}

// Snapshot is ReadSnapshotPaged.
func (l Lister) Snapshot(ctx context.Context, namespace string) (*policies.Snapshot, error) {
	size := l.PageSize
	switch {
	case size == 0:
		size = DefaultPageSize
	case size < 0:
		size = 0
	}
	return ReadSnapshotPaged(ctx, l.Client, namespace, size)
}

// Pods lists the pods of namespace that selector matches (one LIST, the selector sent to the
// API server).
func (l Lister) Pods(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	opts := metav1.ListOptions{}
	if selector != nil {
		opts.LabelSelector = selector.String()
	}
	list, err := l.Client.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// LiveFrom reads the snapshot of sel.Namespace from src and returns its Model (observe.Model).
func LiveFrom(ctx context.Context, src Source, opts policies.Options, sel Selection) (*policies.Model, error) {
	snap, err := src.Snapshot(ctx, sel.Namespace)
	if err != nil {
		return nil, err
	}
	return Model(snap, opts, sel)
}

// ClusterObserver is a Source that also observes Redis clusters itself (a watched cache that
// keeps models and roles): the executor asks it instead of building a model and reading the
// roles per observation.
type ClusterObserver interface {
	// ClusterKeys returns the keys ("namespace/name") of the Redis clusters sel selects, sorted.
	ClusterKeys(sel Selection) []string
	// ObserveCluster returns Redis cluster key as it is now, its roles read from Redis now: the
	// cluster of its namespace's model built with opts (shared with other callers: read it,
	// never ApplyRedis it). An error from the API server's side returns a nil cluster; a
	// failed read of the roles returns the cluster (roles as last read, unknown when never)
	// with the error.
	ObserveCluster(ctx context.Context, opts policies.Options, key string) (*policies.Cluster, error)
}
