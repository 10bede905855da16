// Package metrics holds redis-rebalancer's Prometheus metrics (prefix redis_rebalancer_), which
// `serve` exposes on /metrics (nothing is pushed anywhere). *Metrics implements execute.Observer:
// the executor tells it each step, failover, eviction, move and cluster as they happen; serve
// tells it each pass's end (RunDone) and whether it leads (SetLeader). Names follow the
// descheduler's (descheduler_pods_evicted_total, descheduler_loop_duration_seconds,
// descheduler_build_info): counters end in _total, durations are histograms in seconds.
//
// Cardinality is bounded by the Redis clusters a pass selects: the per-cluster families
// (PerClusterFamilies) carry the labels namespace and cluster (the Redis cluster's name), one
// series per result or rule, and the series of a Redis cluster that a pass without an error no
// longer found are deleted when that pass ends. Nothing is labelled by pod or node.
//
// It imports execute (the Observer's result types), guard and handoff (their observers), report
// and policies; only cmd/redis-rebalancer/app imports it.
package metrics

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// PassBuckets are the pass-duration histogram's buckets (seconds): a pass that only observes
// takes a fraction of a second, one that moves pods minutes, a large scope's an hour or more
// (the descheduler's loop_duration_seconds buckets, extended to two hours).
var PassBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 7200}

// PerClusterFamilies names the metric families labelled by namespace and cluster (one set of
// series per Redis cluster a pass reached; see the package doc for their cardinality).
var PerClusterFamilies = []string{
	Namespace + "_violations", Namespace + "_moves_total", Namespace + "_failovers_total",
	Namespace + "_evictions_total",
}

// BuildInfo is what the build_info metric's labels say of the binary.
type BuildInfo struct {
	// Version is the release version ("v0.1.0", or git describe's output for a build between
	// releases; "dev" when not set at build time).
	Version string
	// Revision is the git commit the binary was built from ("unknown" when not known).
	Revision string
}

// Metrics are the rebalancer's metrics, on a registry of their own (with the Go and process
// collectors).
type Metrics struct {
	registry *prometheus.Registry

	violations   *prometheus.GaugeVec
	moves        *prometheus.CounterVec
	failovers    *prometheus.CounterVec
	evictions    *prometheus.CounterVec
	stepSeconds  *prometheus.HistogramVec
	passSeconds  prometheus.Histogram
	runs         *prometheus.CounterVec
	lastRun      prometheus.Gauge
	lastDuration prometheus.Gauge
	lastOutcome  *prometheus.GaugeVec
	leader       prometheus.Gauge

	guardReviews       *prometheus.CounterVec
	guardReviewSeconds prometheus.Histogram
	guardHoldsExpired  prometheus.Counter
	handOffs           *prometheus.CounterVec
	// mu guards seen and known: the Redis clusters ("namespace/name") reported since the last
	// pass ended, and those with series.
	mu          sync.Mutex
	seen, known map[string]bool
}

var (
	_ execute.Observer = (*Metrics)(nil)
	_ guard.Observer   = (*Metrics)(nil)
	_ handoff.Observer = (*Metrics)(nil)
)

// ReviewBuckets are the eviction guard's answer-duration histogram's buckets (seconds): an answer
// from the cache takes a millisecond or less, one with its Redis read a few.
var ReviewBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// New returns the metrics, registered; build gives the build_info metric's labels.
func New(build BuildInfo) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		violations: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "violations",
			Help: "Violations of each rule per Redis cluster, at the start (phase=before) and at the end (phase=after) of the last pass that reached the cluster.",
		}, []string{"namespace", "cluster", "rule", "phase"}),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "moves_total",
			Help: "Moves tried per Redis cluster, by result: done (every step continued), skipped (a safety check said no), aborted (an error).",
		}, []string{"namespace", "cluster", "result"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "failovers_total",
			Help: "Failovers of a master tried per Redis cluster (before its eviction, or a failover step), by result: succeeded (verified), refused (by Redis), failed (not verified in time, or Redis did not answer).",
		}, []string{"namespace", "cluster", "result"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "evictions_total",
			Help: "Evictions tried through the policy/v1 Eviction API per Redis cluster, by result: evicted, refused (a PodDisruptionBudget or an eviction limit), failed.",
		}, []string{"namespace", "cluster", "result"}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "step_duration_seconds",
			Help:    "Duration of each step of a move (window, healthGate, placeable, pdbDryRun, failover, drain, roleCheck, evict, recreate, rejoin, reobserve), whatever its outcome.",
			Buckets: StepBuckets,
		}, []string{"step"}),
		passSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "pass_duration_seconds",
			Help:    "Time taken by a full pass (observe, plan and move every selected Redis cluster), whatever its outcome.",
			Buckets: PassBuckets,
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "runs_total",
			Help: "Passes made, by outcome (compliant, progressing, outsideWindow, leaseHeld, dryRun, partial, needsAttention, error).",
		}, []string{"outcome"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_run_timestamp_seconds",
			Help: "When the last pass ended (Unix time, seconds).",
		}),
		lastDuration: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_run_duration_seconds",
			Help: "How long the last pass took (seconds); pass_duration_seconds has every pass.",
		}),
		lastOutcome: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_run_outcome",
			Help: "The last pass's outcome: 1 for it, 0 for the other outcomes.",
		}, []string{"outcome"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "leader",
			Help: "1 while this process holds the leader election's Lease (only the leader acts), else 0.",
		}),
		seen: map[string]bool{}, known: map[string]bool{},
	}
	m.guardReviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "guard_reviews_total",
		Help: "Evictions the eviction guard answered, by verdict (allowed, denied), reason (MasterServingSlots, ShardExposed, HandOffNeedsReplica, HandOffRunning, RoleUnknown, ReplicaCovered, NotServing, NodeNotReady, HoldExpired, NotGuarded) and dry_run (true, false).",
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
		Help: "Always 1; the labels give the release version, the git revision and the Go version it was built with.",
	}, []string{"version", "revision", "goversion"})
	buildInfo.WithLabelValues(build.Version, build.Revision, runtime.Version()).Set(1)
	m.registry.MustRegister(m.violations, m.moves, m.failovers, m.evictions, m.stepSeconds, m.passSeconds, m.runs,
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

// see records that the Redis cluster key ("namespace/name") was reported in this pass, and
// returns its namespace and name: the per-cluster families' labels.
func (m *Metrics) see(key string) (namespace, name string) {
	m.mu.Lock()
	m.seen[key], m.known[key] = true, true
	m.mu.Unlock()
	namespace, name, _ = strings.Cut(key, "/")
	return namespace, name
}

// Step observes a step's duration.
func (m *Metrics) Step(_ string, s report.Step) {
	m.stepSeconds.WithLabelValues(s.Name).Observe(s.Seconds)
}

// Failover counts a failover of the Redis cluster ("namespace/name") by result.
func (m *Metrics) Failover(cluster string, r execute.FailoverResult) {
	ns, name := m.see(cluster)
	m.failovers.WithLabelValues(ns, name, string(r)).Inc()
}

// Eviction counts an eviction in the Redis cluster ("namespace/name") by result.
func (m *Metrics) Eviction(cluster string, r execute.EvictionResult) {
	ns, name := m.see(cluster)
	m.evictions.WithLabelValues(ns, name, string(r)).Inc()
}

// Move counts a move in the Redis cluster ("namespace/name") by result: done, skipped or
// aborted.
func (m *Metrics) Move(cluster string, mv report.MoveResult) {
	ns, name := m.see(cluster)
	m.moves.WithLabelValues(ns, name, moveResult(mv.Outcome)).Inc()
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
// The cluster's counters get their series too, at 0 for a result not seen yet, so that a rate
// sees their first increment.
func (m *Metrics) Cluster(cr report.ClusterRun) {
	m.see(cr.Namespace + "/" + cr.Name)
	for _, r := range []string{"done", "skipped", "aborted"} {
		m.moves.WithLabelValues(cr.Namespace, cr.Name, r)
	}
	for _, r := range []execute.FailoverResult{execute.FailoverSucceeded, execute.FailoverRefused, execute.FailoverFailed} {
		m.failovers.WithLabelValues(cr.Namespace, cr.Name, string(r))
	}
	for _, r := range []execute.EvictionResult{execute.EvictionEvicted, execute.EvictionRefused, execute.EvictionFailed} {
		m.evictions.WithLabelValues(cr.Namespace, cr.Name, string(r))
	}
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

// RunDone records a pass's end: when it ended, how long it took (the pass histogram and the
// last-duration gauge), and its outcome (the report's: report.Run.Outcome, one of
// report.Outcomes). A pass that observed every selected Redis cluster (any outcome but
// report.OutcomeError and report.OutcomeLeaseHeld) deletes the per-cluster series of the
// clusters it did not report (a Redis cluster removed, or no longer selected).
func (m *Metrics) RunDone(end time.Time, took time.Duration, outcome report.Outcome) {
	m.runs.WithLabelValues(string(outcome)).Inc()
	m.passSeconds.Observe(took.Seconds())
	m.lastRun.Set(float64(end.UnixNano()) / 1e9)
	m.lastDuration.Set(took.Seconds())
	for _, o := range report.Outcomes {
		v := 0.0
		if o == outcome {
			v = 1
		}
		m.lastOutcome.WithLabelValues(string(o)).Set(v)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if outcome != report.OutcomeError && outcome != report.OutcomeLeaseHeld {
		for key := range m.known {
			if m.seen[key] {
				continue
			}
			ns, name, _ := strings.Cut(key, "/")
			labels := prometheus.Labels{"namespace": ns, "cluster": name}
			for _, v := range []interface {
				DeletePartialMatch(prometheus.Labels) int
			}{m.violations, m.moves, m.failovers, m.evictions} {
				v.DeletePartialMatch(labels)
			}
			delete(m.known, key)
		}
	}
	m.seen = map[string]bool{}
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
