package guard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Source is the watched cache the guard answers from: no request reaches the API server while
// it answers a review. InformerSource implements it on client-go informers.
type Source interface {
	// Pod returns the pod namespace/name as last watched.
	Pod(namespace, name string) (*corev1.Pod, bool)
	// Node returns the node as last watched.
	Node(name string) (*corev1.Node, bool)
	// ClusterPods returns the pods of namespace whose cluster label (the policy's
	// selection.clusterLabel) has the value cluster.
	ClusterPods(namespace, cluster string) []*corev1.Pod
	// PodsOnNode returns the pods bound to node.
	PodsOnNode(node string) []*corev1.Pod
	// Nodes returns every node.
	Nodes() []*corev1.Node
}

// Index names of InformerSource's pod indexer.
const (
	indexCluster = "redis-cluster" // "namespace/cluster label value"
	indexNode    = "node"          // spec.nodeName
)

// InformerSource is a Source on a client-go SharedInformerFactory: an informer on pods (of one
// namespace, or all) indexed by Redis cluster and by node, and an informer on nodes. Objects are
// stored without their managedFields.
type InformerSource struct {
	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	nodes   cache.SharedIndexInformer
}

// NewInformerSource returns an InformerSource reading client: pods of namespace ("" = all), with
// clusterLabel the label whose value names a pod's Redis cluster. Start it, then wait for
// WaitForSync.
func NewInformerSource(client kubernetes.Interface, namespace, clusterLabel string) (*InformerSource, error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
				m.GetObjectMeta().SetManagedFields(nil)
			}
			return obj, nil
		}))
	s := &InformerSource{factory: f, pods: f.Core().V1().Pods().Informer(), nodes: f.Core().V1().Nodes().Informer()}
	err := s.pods.AddIndexers(cache.Indexers{
		indexCluster: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			v, ok := p.Labels[clusterLabel]
			if !ok {
				return nil, nil
			}
			return []string{p.Namespace + "/" + v}, nil
		},
		indexNode: func(obj any) ([]string, error) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("guard: pod indexers: %w", err)
	}
	return s, nil
}

// Start starts the informers; they stop when ctx ends.
func (s *InformerSource) Start(ctx context.Context) { s.factory.Start(ctx.Done()) }

// WaitForSync waits until both informers have listed once, at most timeout.
func (s *InformerSource) WaitForSync(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), s.pods.HasSynced, s.nodes.HasSynced) {
		return fmt.Errorf("guard: the pod and node informers did not sync within %s", timeout)
	}
	return nil
}

// HasSynced reports whether both informers have listed once.
func (s *InformerSource) HasSynced() bool { return s.pods.HasSynced() && s.nodes.HasSynced() }

// AddNodeHandler registers h on the node informer (the hand-off watches nodes being emptied).
func (s *InformerSource) AddNodeHandler(h cache.ResourceEventHandler) error {
	_, err := s.nodes.AddEventHandler(h)
	return err
}

// Pod implements Source.
func (s *InformerSource) Pod(namespace, name string) (*corev1.Pod, bool) {
	return get[*corev1.Pod](s.pods.GetStore(), namespace+"/"+name)
}

// Node implements Source.
func (s *InformerSource) Node(name string) (*corev1.Node, bool) {
	return get[*corev1.Node](s.nodes.GetStore(), name)
}

// ClusterPods implements Source.
func (s *InformerSource) ClusterPods(namespace, cluster string) []*corev1.Pod {
	return byIndex[*corev1.Pod](s.pods.GetIndexer(), indexCluster, namespace+"/"+cluster)
}

// PodsOnNode implements Source.
func (s *InformerSource) PodsOnNode(node string) []*corev1.Pod {
	return byIndex[*corev1.Pod](s.pods.GetIndexer(), indexNode, node)
}

// Nodes implements Source.
func (s *InformerSource) Nodes() []*corev1.Node {
	var out []*corev1.Node
	for _, o := range s.nodes.GetStore().List() {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func get[T any](store cache.Store, key string) (T, bool) {
	var zero T
	o, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return zero, false
	}
	t, ok := o.(T)
	return t, ok
}

func byIndex[T any](idx cache.Indexer, name, value string) []T {
	objs, err := idx.ByIndex(name, value)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
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

// NodeLeaving reports whether node is being emptied: cordoned (spec.unschedulable), or carrying a
// taint whose key is one of drainTaints (guard.drainTaints). It says how.
func NodeLeaving(node *corev1.Node, drainTaints []string) (bool, string) {
	if node == nil {
		return false, ""
	}
	if node.Spec.Unschedulable {
		return true, "cordoned"
	}
	for _, t := range node.Spec.Taints {
		if slices.Contains(drainTaints, t.Key) {
			return true, "taint " + t.Key
		}
	}
	return false, ""
}
