package execute

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	"sigs.k8s.io/descheduler/pkg/features"
)

// EventSource is the reporting controller of the events a run records.
const EventSource = "redis-rebalancer"

// evictor is the descheduler's PodEvictor, created once per run: every eviction of the run goes
// through it, so that its limits (MaxPodsToEvictPerNode, ...PerNamespace, ...Total) count
// evictions over every cluster. It records each eviction's event on the run's recorder.
type evictor struct {
	evict func(ctx context.Context, pod *corev1.Pod) error
}

// newEvictor returns the run's evictor: cfg.EvictPod when set, else a PodEvictor with cfg's
// limits, recording its events on recorder.
func newEvictor(ctx context.Context, client kubernetes.Interface, recorder events.EventRecorder, cfg Config) (*evictor, error) {
	if cfg.EvictPod != nil {
		return &evictor{evict: cfg.EvictPod}, nil
	}
	// The pod informer is only used by the EvictionsInBackground feature, which stays off.
	informer := informers.NewSharedInformerFactory(client, 0).Core().V1().Pods().Informer()
	opts := evictions.NewOptions().
		WithMaxPodsToEvictPerNode(cfg.MaxPodsToEvictPerNode).
		WithMaxPodsToEvictPerNamespace(cfg.MaxPodsToEvictPerNamespace).
		WithMaxPodsToEvictTotal(cfg.MaxPodsToEvictTotal)
	pe, err := evictions.NewPodEvictor(ctx, client, recorder, informer, features.DefaultMutableFeatureGate, opts)
	if err != nil {
		return nil, fmt.Errorf("pod evictor: %w", err)
	}
	return &evictor{evict: func(ctx context.Context, pod *corev1.Pod) error {
		// The PodEvictor records the eviction's event (reason EvictionStrategy); the move's
		// reason is in the run's report and progress, not in the event's reason, which must be
		// a short word.
		return pe.EvictPod(ctx, pod, evictions.EvictOptions{StrategyName: EvictionStrategy, ProfileName: EventSource})
	}}, nil
}

// budget reserves an eviction against the run's limits before the move's first disruption (the
// failover of a master), so that two clusters in parallel never both fail a master over for the
// last eviction the limits allow. It counts as the PodEvictor does (the pod's node, its
// namespace, the total; the descheduler's order and errors); the PodEvictor still enforces the
// limits at the eviction itself.
type budget struct {
	perNode, perNamespace, total *uint

	mu   sync.Mutex
	node map[string]uint // reserved or made, per node the pod ran on
	ns   map[string]uint // per namespace
	all  uint
}

func newBudget(cfg Config) *budget {
	return &budget{
		perNode: cfg.MaxPodsToEvictPerNode, perNamespace: cfg.MaxPodsToEvictPerNamespace, total: cfg.MaxPodsToEvictTotal,
		node: map[string]uint{}, ns: map[string]uint{},
	}
}

// reserve counts one eviction of pod, or returns the descheduler's limit error
// (*evictions.EvictionTotalLimitError, *EvictionNodeLimitError, *EvictionNamespaceLimitError)
// when a limit would be exceeded. release gives the reservation back (when the eviction was not
// made); calling it more than once is harmless.
func (b *budget) reserve(pod *corev1.Pod) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	node := pod.Spec.NodeName
	switch {
	case b.total != nil && b.all+1 > *b.total:
		return nil, fmt.Errorf("%w (maxPodsToEvictTotal %d)", evictions.NewEvictionTotalLimitError(), *b.total)
	case b.perNode != nil && node != "" && b.node[node]+1 > *b.perNode:
		return nil, fmt.Errorf("%w (node %s, maxPodsToEvictPerNode %d)", evictions.NewEvictionNodeLimitError(node), node, *b.perNode)
	case b.perNamespace != nil && b.ns[pod.Namespace]+1 > *b.perNamespace:
		return nil, fmt.Errorf("%w (namespace %s, maxPodsToEvictPerNamespace %d)", evictions.NewEvictionNamespaceLimitError(pod.Namespace), pod.Namespace, *b.perNamespace)
	}
	b.all++
	b.ns[pod.Namespace]++
	if node != "" {
		b.node[node]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.all--
			b.ns[pod.Namespace]--
			if node != "" {
				b.node[node]--
			}
		})
	}, nil
}
