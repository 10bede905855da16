// Package metrics holds redis-rebalancer's Prometheus metrics (prefix redis_rebalancer_), which
// `serve` exposes on /metrics (nothing is pushed anywhere). *Metrics implements execute.Observer:
// the executor tells it each step, failover, eviction, move and cluster as they happen; serve
// tells it each pass's end (RunDone) and whether it leads (SetLeader).
//
// It imports execute (the Observer's result types), guard and handoff (their observers), report
// and policies; only cmd/redis-rebalancer/app imports it.
package metrics

import (
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/handoff"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// Namespace is every metric's prefix (redis_rebalancer_).
const Namespace = "redis_rebalancer"

// StepBuckets are the step-duration histogram's buckets (seconds): a role check takes
// milliseconds, a re-creation or a rejoin minutes.
var StepBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics are the rebalancer's metrics, on a registry of their own (with the Go and process
// collectors).
type Metrics struct {
	registry *prometheus.Registry

	violations   *prometheus.GaugeVec
	moves        *prometheus.CounterVec
	failovers    *prometheus.CounterVec
	evictions    *prometheus.CounterVec
	stepSeconds  *prometheus.HistogramVec
	runs         *prometheus.CounterVec
	lastRun      prometheus.Gauge
	lastDuration prometheus.Gauge
	lastOutcome  *prometheus.GaugeVec
	leader       prometheus.Gauge

	guardReviews       *prometheus.CounterVec
	guardReviewSeconds prometheus.Histogram
	guardHoldsExpired  prometheus.Counter
	handOffs           *prometheus.CounterVec
}

var (
	_ execute.Observer = (*Metrics)(nil)
	_ guard.Observer   = (*Metrics)(nil)
	_ handoff.Observer = (*Metrics)(nil)
)

// ReviewBuckets are the eviction guard's answer-duration histogram's buckets (seconds): an answer
// from the cache takes a millisecond or less, one with its Redis read a few.
var ReviewBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// New returns the metrics, registered; version is the build_info metric's version label.
func New(version string) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		violations: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "violations",
			Help: "Violations of each rule per Redis cluster, at the start (phase=before) and at the end (phase=after) of the last pass that reached the cluster.",
		}, []string{"namespace", "cluster", "rule", "phase"}),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "moves_total",
			Help: "Moves tried, by result: done (every step continued), skipped (a safety check said no), aborted (an error).",
		}, []string{"result"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "failovers_total",
			Help: "Failovers of a master tried before its eviction, by result: succeeded (verified), refused (by Redis), failed (not verified in time, or Redis did not answer).",
		}, []string{"result"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "evictions_total",
			Help: "Evictions tried through the policy/v1 Eviction API, by result: evicted, refused (a PodDisruptionBudget or an eviction limit), failed.",
		}, []string{"result"}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "step_duration_seconds",
			Help:    "Duration of each step of a move (window, healthGate, placeable, pdbDryRun, failover, drain, roleCheck, evict, recreate, rejoin, reobserve), whatever its outcome.",
			Buckets: StepBuckets,
		}, []string{"step"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "runs_total",
			Help: "Passes made, by outcome (compliant, progressing, outsideWindow, leaseHeld, dryRun, needsAttention, error).",
		}, []string{"outcome"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_run_timestamp_seconds",
			Help: "When the last pass ended (Unix time, seconds).",
		}),
		lastDuration: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_run_duration_seconds",
			Help: "How long the last pass took (seconds).",
		}),
		lastOutcome: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_run_outcome",
			Help: "The last pass's outcome: 1 for it, 0 for the other outcomes.",
		}, []string{"outcome"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "leader",
			Help: "1 while this process holds the leader election's Lease (only the leader acts), else 0.",
		}),
	}
	m.guardReviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "guard_reviews_total",
		Help: "Evictions the eviction guard answered, by verdict (allowed, denied), reason (MasterServingSlots, ShardExposed, HandOffNeedsReplica, RoleUnknown, ReplicaCovered, NotServing, NodeNotReady, HoldExpired, NotGuarded) and dry_run (true, false).",
	}, []string{"verdict", "reason", "dry_run"})
	m.guardReviewSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "guard_review_duration_seconds",
		Help:    "How long the eviction guard took to answer a review, its Redis read included.",
		Buckets: ReviewBuckets,
	})
	m.guardHoldsExpired = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "guard_holds_expired_total",
		Help: "Evictions admitted because the guard had held them longer than guard.maxHold, without a hand-off (each with a Warning Event RedisEvictionHoldExpired).",
	})
	m.handOffs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "handoffs_total",
		Help: "Hand-offs of a master leaving (on a node being emptied, or held by the guard) tried by the leader, by result: done (failed over, verified), skipped (a safety check said no; retried), aborted (a step failed; retried), infeasible (no replica on a node that stays).",
	}, []string{"result"})
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help: "Always 1; the labels give the version and the Go version it was built with.",
	}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(version, runtime.Version()).Set(1)
	m.registry.MustRegister(m.violations, m.moves, m.failovers, m.evictions, m.stepSeconds, m.runs,
		m.lastRun, m.lastDuration, m.lastOutcome, m.leader, buildInfo,
		m.guardReviews, m.guardReviewSeconds, m.guardHoldsExpired, m.handOffs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, o := range report.Outcomes {
		m.lastOutcome.WithLabelValues(string(o)).Set(0)
	}
	return m
}

// Registry returns the registry the metrics are registered on.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Step observes a step's duration.
func (m *Metrics) Step(_ string, s report.Step) {
	m.stepSeconds.WithLabelValues(s.Name).Observe(s.Seconds)
}

// Failover counts a failover by result.
func (m *Metrics) Failover(_ string, r execute.FailoverResult) {
	m.failovers.WithLabelValues(string(r)).Inc()
}

// Eviction counts an eviction by result.
func (m *Metrics) Eviction(_ string, r execute.EvictionResult) {
	m.evictions.WithLabelValues(string(r)).Inc()
}

// Move counts a move by result: done, skipped or aborted.
func (m *Metrics) Move(_ string, mv report.MoveResult) {
	m.moves.WithLabelValues(moveResult(mv.Outcome)).Inc()
}

// moveResult names a move's last step outcome as the moves metric does.
func moveResult(outcome string) string {
	switch outcome {
	case report.OutcomeContinue:
		return "done"
	case report.OutcomeSkip:
		return "skipped"
	}
	return "aborted"
}

// Cluster sets the cluster's violation gauges from its report: per rule, the violations before
// and after the pass (0 for a rule without any).
func (m *Metrics) Cluster(cr report.ClusterRun) {
	m.violations.DeletePartialMatch(prometheus.Labels{"namespace": cr.Namespace, "cluster": cr.Name})
	for phase, vs := range map[string][]policies.Violation{"before": cr.Before, "after": cr.After} {
		// Every registered rule has a series, at 0 when the cluster breaks none, so that an alert
		// on a rule sees one; a rule outside the registry still gets one when violated.
		count := map[policies.Rule]int{}
		for _, r := range policies.Rules() {
			count[r.Name] = 0
		}
		for _, v := range vs {
			count[v.Rule]++
		}
		for r, n := range count {
			m.violations.WithLabelValues(cr.Namespace, cr.Name, string(r), phase).Set(float64(n))
		}
	}
}

// RunDone records a pass's end: when it ended, how long it took, and its outcome (the report's:
// report.Run.Outcome, one of report.Outcomes).
func (m *Metrics) RunDone(end time.Time, took time.Duration, outcome report.Outcome) {
	m.runs.WithLabelValues(string(outcome)).Inc()
	m.lastRun.Set(float64(end.UnixNano()) / 1e9)
	m.lastDuration.Set(took.Seconds())
	for _, o := range report.Outcomes {
		v := 0.0
		if o == outcome {
			v = 1
		}
		m.lastOutcome.WithLabelValues(string(o)).Set(v)
	}
}

// SetLeader records whether this process leads.
func (m *Metrics) SetLeader(leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.Set(v)
}

// Review counts one answer of the eviction guard and observes its duration (guard.Observer).
func (m *Metrics) Review(reason guard.Reason, allowed, dryRun bool, took time.Duration) {
	verdict := "denied"
	if allowed {
		verdict = "allowed"
	}
	m.guardReviews.WithLabelValues(verdict, string(reason), strconv.FormatBool(dryRun)).Inc()
	m.guardReviewSeconds.Observe(took.Seconds())
	if reason == guard.ReasonHoldExpired && !dryRun {
		m.guardHoldsExpired.Inc()
	}
}

// HandOff counts one hand-off attempt by result (handoff.Observer).
func (m *Metrics) HandOff(result string) {
	m.handOffs.WithLabelValues(result).Inc()
}
