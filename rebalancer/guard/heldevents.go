package guard

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// HeldEvent is one RedisEvictionHeld Event a guard replica recorded on a pod, read back.
type HeldEvent struct {
	// Namespace, Name and UID are the pod's.
	Namespace, Name string
	UID             types.UID
	// First is the replica's first denial of the pod's eviction (the Event's eventTime, else its
	// firstTimestamp); Last the latest the Event counts (its series' lastObservedTime, else its
	// lastTimestamp, else First).
	First, Last time.Time
}

// ParseHeldEvent reads a RedisEvictionHeld Event on a pod recorded by redis-rebalancer
// (reportingController source, or none as core/v1 Events of older recorders have), and reports
// whether ev is one.
func ParseHeldEvent(ev *corev1.Event, source string) (HeldEvent, bool) {
	if ev.Reason != EventEvictionHeld || ev.InvolvedObject.Kind != "Pod" || ev.ReportingController != "" && ev.ReportingController != source {
		return HeldEvent{}, false
	}
	first := ev.EventTime.Time
	if first.IsZero() {
		first = ev.FirstTimestamp.Time
	}
	last := ev.LastTimestamp.Time
	if ev.Series != nil {
		last = ev.Series.LastObservedTime.Time
	}
	if first.IsZero() {
		first = last
	}
	if last.Before(first) {
		last = first
	}
	if first.IsZero() {
		return HeldEvent{}, false
	}
	o := ev.InvolvedObject
	return HeldEvent{Namespace: o.Namespace, Name: o.Name, UID: o.UID, First: first, Last: last}, true
}

// WatchHeldEvents starts an informer on the RedisEvictionHeld Events recorded by source in
// namespace ("" for all, as the selection's) and calls seen with each as it is added or updated,
// until ctx ends. Every guard replica runs one to count guard.maxHold from the first denial of
// any replica (Holds.Seen); the hand-off's leader hands the holds they tell off.
func WatchHeldEvents(ctx context.Context, client kubernetes.Interface, namespace, source string, seen func(HeldEvent)) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("reason", EventEvictionHeld).String()
		}))
	add := func(obj any) {
		if ev, ok := obj.(*corev1.Event); ok {
			if h, ok := ParseHeldEvent(ev, source); ok {
				seen(h)
			}
		}
	}
	_, _ = f.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }})
	f.Start(ctx.Done())
}
