package execute

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The Kubernetes Events a run records (events.k8s.io/v1, reporting controller EventSource), in
// the descheduler's style: a CamelCase reason, an action, a note in words. The eviction itself is
// recorded by the descheduler's PodEvictor (type Normal, reason EvictionStrategy, action
// "Descheduled", note "pod eviction from NODE node by sigs.k8s.io/descheduler"); it is not
// recorded twice. A dry run records nothing.
const (
	// ReasonFailover (Normal, on the old master's pod): the master was failed over to an
	// in-sync replica and the switch verified, before its eviction.
	ReasonFailover = "RedisFailover"
	// ReasonHandOff (Normal, on the old master's pod): the master was failed over to an in-sync
	// replica on a node that stays, and the switch verified, before a disruption another tool
	// makes (a drain, an eviction the guard held): Executor.HandOff.
	ReasonHandOff = "RedisHandOff"
	// ReasonFailoverRefused (Warning, on the master's pod): Redis refused the failover; the pod
	// was not evicted.
	ReasonFailoverRefused = "RedisFailoverRefused"
	// ReasonFailoverFailed (Warning, on the master's pod): the failover was not verified in
	// time, or Redis did not answer; the pod was not evicted.
	ReasonFailoverFailed = "RedisFailoverFailed"
	// ReasonMoveSkipped (Warning, on the pod): a safety check said no (window, health gate,
	// placeability, PodDisruptionBudget, eviction limit, role check, graceful stop); the note
	// names the step and its reason.
	ReasonMoveSkipped = "RedisMoveSkipped"
	// ReasonMoveAborted (Warning, on the pod): a step of the move failed; the note names the
	// step and the error.
	ReasonMoveAborted = "RedisMoveAborted"
	// ReasonClusterNotFixed (Warning, on each StatefulSet of the Redis cluster): the run ended
	// with the cluster not compliant and an outcome that is not expected
	// (report.OutcomePartial, report.OutcomeNeedsAttention or report.OutcomeError): no plan, a
	// skipped or aborted move, an observation that failed; not a closed window, the move budget
	// or an eviction limit, a graceful stop or a dry run.
	ReasonClusterNotFixed = "RedisClusterNotFixed"

	// ReasonClaimsReleased (Normal, on the pod): after its eviction, the pod's claims were
	// deleted so that it can come back in another zone; it resyncs in full from its master.
	ReasonClaimsReleased = "RedisClaimsReleased"
	// ReasonClaimsKept (Warning, on the pod): a move that was to release the pod's claims kept
	// them (its shard's master not healthy, another claim of the shard in flight, the pod gone
	// too soon); the pod comes back where its volumes are.
	ReasonClaimsKept = "RedisClaimsKept"

	// EvictionStrategy is the StrategyName given to the PodEvictor: the reason of its eviction
	// event, as a descheduler plugin's name is.
	EvictionStrategy = "RedisRebalance"

	// ActionFailover, ActionRebalance and ActionRelease are the events' actions.
	ActionFailover  = "Failover"
	ActionRebalance = "Rebalance"
	ActionRelease   = "ReleaseClaims"
)

// noteLimit is the API server's limit on an event's note (characters).
const noteLimit = 1024

// eventFlushTimeout bounds how long closing a run waits for its events to be written.
const eventFlushTimeout = 5 * time.Second

// recording is a run's event recorder: an events.k8s.io/v1 broadcaster whose writes are
// counted, so that the run's end waits (up to eventFlushTimeout) until every event recorded is
// written; a one-shot run would otherwise exit with its last events still queued.
type recording struct {
	recorder    events.EventRecorder
	broadcaster events.EventBroadcaster // nil when the recorder was given (Config.Recorder)
	stop        context.CancelFunc

	mu                sync.Mutex
	recorded, written int
}

// newRecording returns the run's recording: on rec when given, else on a broadcaster of its own
// writing to client.
func newRecording(client kubernetes.Interface, rec events.EventRecorder) *recording {
	r := &recording{}
	if rec != nil {
		r.recorder = rec
		return r
	}
	r.broadcaster = events.NewBroadcaster(&countingSink{sink: &events.EventSinkImpl{Interface: client.EventsV1()}, done: r.wrote})
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.broadcaster.StartRecordingToSink(ctx.Done())
	r.recorder = &countingRecorder{EventRecorder: r.broadcaster.NewRecorder(scheme.Scheme, EventSource), count: r.counted}
	return r
}

func (r *recording) counted() {
	r.mu.Lock()
	r.recorded++
	r.mu.Unlock()
}

func (r *recording) wrote() {
	r.mu.Lock()
	r.written++
	r.mu.Unlock()
}

// close waits until every event recorded is written (or eventFlushTimeout passes; an event the
// broadcaster merged into a series is never written on its own), then stops the broadcaster.
func (r *recording) close() {
	if r.broadcaster == nil {
		return
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, eventFlushTimeout, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.written >= r.recorded, nil
	})
	if err != nil {
		r.mu.Lock()
		klog.InfoS("Not every event was written before the run ended", "recorded", r.recorded, "written", r.written)
		r.mu.Unlock()
	}
	r.broadcaster.Shutdown()
	r.stop()
}

// pod records an event on a pod.
func (r *recording) pod(p *corev1.Pod, eventType, reason, action, format string, args ...any) {
	if r == nil || p == nil {
		return
	}
	r.recorder.Eventf(p, nil, eventType, reason, action, "%s", note(format, args...))
}

// clusterNotFixed records ReasonClusterNotFixed on each StatefulSet of c.
func (r *recording) clusterNotFixed(c *policies.Cluster, cr report.ClusterRun) {
	if r == nil || c == nil {
		return
	}
	for _, s := range c.StatefulSets {
		r.recorder.Eventf(s, nil, corev1.EventTypeWarning, ReasonClusterNotFixed, ActionRebalance, "%s",
			note("Redis cluster %s/%s does not comply after the run (stopped by %s): %s", cr.Namespace, cr.Name, cr.StoppedBy, cr.Stopped))
	}
}

// note formats an event's note, cut to the API server's limit.
func note(format string, args ...any) string {
	s := fmt.Sprintf(format, args...)
	if r := []rune(s); len(r) > noteLimit {
		s = string(r[:noteLimit-1]) + "…"
	}
	return s
}

// countingRecorder counts the events recorded.
type countingRecorder struct {
	events.EventRecorder
	count func()
}

// Eventf records the event and counts it.
func (c *countingRecorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	c.count()
	c.EventRecorder.Eventf(regarding, related, eventType, reason, action, note, args...)
}

// countingSink counts the writes of events that ended (written, or given up).
type countingSink struct {
	sink events.EventSink
	done func()
}

func (s *countingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	got, err := s.sink.Create(ctx, e)
	s.ended(err)
	return got, err
}

func (s *countingSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	got, err := s.sink.Update(ctx, e)
	s.ended(err)
	return got, err
}

func (s *countingSink) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	got, err := s.sink.Patch(ctx, e, data)
	s.ended(err)
	return got, err
}

// ended counts a write that will not be retried: it succeeded, or the API server answered with
// an error status (the broadcaster retries only transport errors).
func (s *countingSink) ended(err error) {
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		s.done()
	}
}
