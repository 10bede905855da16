package metrics

import (
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// TestMetrics feeds the metrics what one pass with one move tells them and checks every series
// the pass set, then that a second pass replaces the cluster's violation gauges and the last
// outcome.
func TestMetrics(t *testing.T) {
	m := New(BuildInfo{Version: "v1.2.3", Revision: "abc"})
	m.Step("redis/a", report.Step{Name: report.StepFailover, Outcome: report.OutcomeContinue, Seconds: 0.05})
	m.Step("redis/a", report.Step{Name: report.StepRecreate, Outcome: report.OutcomeContinue, Seconds: 3})
	m.Failover("redis/a", execute.FailoverSucceeded)
	m.Eviction("redis/a", execute.EvictionEvicted)
	m.Move("redis/a", report.MoveResult{Outcome: report.OutcomeContinue})
	m.Move("redis/a", report.MoveResult{Outcome: report.OutcomeSkip})
	m.Cluster(report.ClusterRun{Namespace: "redis", Name: "a",
		Before: []policies.Violation{{Rule: policies.MaxPodsPerNode}, {Rule: policies.MaxPodsPerNode}, {Rule: policies.NodeSpread, Soft: true}},
		After:  []policies.Violation{{Rule: policies.NodeSpread, Soft: true}},
	})
	end := time.Date(2026, 3, 10, 2, 30, 0, 0, time.UTC)
	m.RunDone(end, 12*time.Second, report.OutcomeCompliant)
	m.SetLeader(true)

	want := `
# HELP redis_rebalancer_evictions_total Evictions tried through the policy/v1 Eviction API per Redis cluster, by result: evicted, refused (a PodDisruptionBudget or an eviction limit), failed.
# TYPE redis_rebalancer_evictions_total counter
redis_rebalancer_evictions_total{cluster="a",namespace="redis",result="evicted"} 1
redis_rebalancer_evictions_total{cluster="a",namespace="redis",result="failed"} 0
redis_rebalancer_evictions_total{cluster="a",namespace="redis",result="refused"} 0
# HELP redis_rebalancer_failovers_total Failovers of a master tried per Redis cluster (before its eviction, or a failover step), by result: succeeded (verified), refused (by Redis), failed (not verified in time, or Redis did not answer).
# TYPE redis_rebalancer_failovers_total counter
redis_rebalancer_failovers_total{cluster="a",namespace="redis",result="failed"} 0
redis_rebalancer_failovers_total{cluster="a",namespace="redis",result="refused"} 0
redis_rebalancer_failovers_total{cluster="a",namespace="redis",result="succeeded"} 1
# HELP redis_rebalancer_moves_total Moves tried per Redis cluster, by result: done (every step continued), skipped (a safety check said no), aborted (an error).
# TYPE redis_rebalancer_moves_total counter
redis_rebalancer_moves_total{cluster="a",namespace="redis",result="aborted"} 0
redis_rebalancer_moves_total{cluster="a",namespace="redis",result="done"} 1
redis_rebalancer_moves_total{cluster="a",namespace="redis",result="skipped"} 1
# HELP redis_rebalancer_last_run_outcome The last pass's outcome: 1 for it, 0 for the other outcomes.
# TYPE redis_rebalancer_last_run_outcome gauge
redis_rebalancer_last_run_outcome{outcome="compliant"} 1
redis_rebalancer_last_run_outcome{outcome="dryRun"} 0
redis_rebalancer_last_run_outcome{outcome="error"} 0
redis_rebalancer_last_run_outcome{outcome="leaseHeld"} 0
redis_rebalancer_last_run_outcome{outcome="needsAttention"} 0
redis_rebalancer_last_run_outcome{outcome="outsideWindow"} 0
redis_rebalancer_last_run_outcome{outcome="partial"} 0
redis_rebalancer_last_run_outcome{outcome="progressing"} 0
# HELP redis_rebalancer_last_run_timestamp_seconds When the last pass ended (Unix time, seconds).
# TYPE redis_rebalancer_last_run_timestamp_seconds gauge
redis_rebalancer_last_run_timestamp_seconds 1.7731098e+09
# HELP redis_rebalancer_last_run_duration_seconds How long the last pass took (seconds); pass_duration_seconds has every pass.
# TYPE redis_rebalancer_last_run_duration_seconds gauge
redis_rebalancer_last_run_duration_seconds 12
# HELP redis_rebalancer_runs_total Passes made, by outcome (compliant, progressing, outsideWindow, leaseHeld, dryRun, partial, needsAttention, error).
# TYPE redis_rebalancer_runs_total counter
redis_rebalancer_runs_total{outcome="compliant"} 1
# HELP redis_rebalancer_leader 1 while this process holds the leader election's Lease (only the leader acts), else 0.
# TYPE redis_rebalancer_leader gauge
redis_rebalancer_leader 1
# HELP redis_rebalancer_pass_duration_seconds Time taken by a full pass (observe, plan and move every selected Redis cluster), whatever its outcome.
# TYPE redis_rebalancer_pass_duration_seconds histogram
redis_rebalancer_pass_duration_seconds_bucket{le="0.01"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="0.025"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="0.05"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="0.1"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="0.25"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="0.5"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="1"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="2.5"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="5"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="10"} 0
redis_rebalancer_pass_duration_seconds_bucket{le="25"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="50"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="100"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="250"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="500"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="1000"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="2500"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="7200"} 1
redis_rebalancer_pass_duration_seconds_bucket{le="+Inf"} 1
redis_rebalancer_pass_duration_seconds_sum 12
redis_rebalancer_pass_duration_seconds_count 1
`
	names := []string{"redis_rebalancer_evictions_total", "redis_rebalancer_failovers_total", "redis_rebalancer_moves_total",
		"redis_rebalancer_last_run_outcome", "redis_rebalancer_last_run_timestamp_seconds", "redis_rebalancer_last_run_duration_seconds",
		"redis_rebalancer_runs_total", "redis_rebalancer_leader", "redis_rebalancer_pass_duration_seconds"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	for _, tc := range []struct {
		rule, phase string
		want        float64
	}{
		{"MaxPodsPerNode", "before", 2}, {"NodeSpread", "before", 1}, {"ShardSeparation", "before", 0},
		{"MaxPodsPerNode", "after", 0}, {"NodeSpread", "after", 1},
	} {
		if got := testutil.ToFloat64(m.violations.WithLabelValues("redis", "a", tc.rule, tc.phase)); got != tc.want {
			t.Errorf("violations{rule=%s,phase=%s} = %v, want %v", tc.rule, tc.phase, got, tc.want)
		}
	}
	if got := testutil.CollectAndCount(m.stepSeconds); got != 2 {
		t.Errorf("step histogram series = %d, want 2 (failover, recreate)", got)
	}
	if got, want := testutil.CollectAndCount(m.violations), 2*len(policies.Rules()); got != want {
		t.Errorf("violation series = %d, want %d (every registered rule, before and after)", got, want)
	}

	// A second pass: the gauges follow it.
	m.Cluster(report.ClusterRun{Namespace: "redis", Name: "a"})
	m.RunDone(end.Add(time.Minute), time.Second, report.OutcomeError)
	if got := testutil.ToFloat64(m.violations.WithLabelValues("redis", "a", "MaxPodsPerNode", "before")); got != 0 {
		t.Errorf("violations after the second pass = %v, want 0", got)
	}
	got := map[string]float64{}
	for _, o := range report.Outcomes {
		got[string(o)] = testutil.ToFloat64(m.lastOutcome.WithLabelValues(string(o)))
	}
	if diff := cmp.Diff(map[string]float64{"compliant": 0, "progressing": 0, "outsideWindow": 0, "leaseHeld": 0, "dryRun": 0, "partial": 0, "needsAttention": 0, "error": 1}, got); diff != "" {
		t.Errorf("last outcome (-want +got):\n%s", diff)
	}
}

// TestClusterSeriesForgotten: the per-cluster series of a Redis cluster that a pass without an
// error no longer reports are deleted at its end (bounded cardinality); a pass that ended with an
// error, or held no Lease, keeps them (it may not have seen every cluster).
func TestClusterSeriesForgotten(t *testing.T) {
	m := New(BuildInfo{Version: "v1"})
	for _, key := range []string{"redis/a", "redis/b"} {
		m.Eviction(key, execute.EvictionEvicted)
		ns, name, _ := strings.Cut(key, "/")
		m.Cluster(report.ClusterRun{Namespace: ns, Name: name})
	}
	m.RunDone(time.Now(), time.Second, report.OutcomeNeedsAttention)
	clusters := func() []string {
		var got []string
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, mf := range mfs {
			for _, metric := range mf.GetMetric() {
				ns, name := "", ""
				for _, l := range metric.GetLabel() {
					switch l.GetName() {
					case "namespace":
						ns = l.GetValue()
					case "cluster":
						name = l.GetValue()
					}
				}
				if name == "" {
					continue
				}
				if !slices.Contains(PerClusterFamilies, mf.GetName()) {
					t.Errorf("%s carries a cluster label but is not in PerClusterFamilies", mf.GetName())
				}
				if k := ns + "/" + name; !seen[k] {
					seen[k] = true
					got = append(got, k)
				}
			}
		}
		slices.Sort(got)
		return got
	}
	if diff := cmp.Diff([]string{"redis/a", "redis/b"}, clusters()); diff != "" {
		t.Errorf("after the first pass (-want +got):\n%s", diff)
	}
	// Only a is reported, and the pass fails: b's series stay.
	m.Cluster(report.ClusterRun{Namespace: "redis", Name: "a"})
	m.RunDone(time.Now(), time.Second, report.OutcomeError)
	if diff := cmp.Diff([]string{"redis/a", "redis/b"}, clusters()); diff != "" {
		t.Errorf("after a pass with an error (-want +got):\n%s", diff)
	}
	// A pass that held no Lease observed nothing: every series stays.
	m.RunDone(time.Now(), time.Second, report.OutcomeLeaseHeld)
	if diff := cmp.Diff([]string{"redis/a", "redis/b"}, clusters()); diff != "" {
		t.Errorf("after a pass that held no Lease (-want +got):\n%s", diff)
	}
	// Only a is reported, and the pass ends without an error: b is gone.
	m.Cluster(report.ClusterRun{Namespace: "redis", Name: "a"})
	m.RunDone(time.Now(), time.Second, report.OutcomeCompliant)
	if diff := cmp.Diff([]string{"redis/a"}, clusters()); diff != "" {
		t.Errorf("after a pass that no longer saw b (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(m.evictions.WithLabelValues("redis", "a", "evicted")); got != 1 {
		t.Errorf("a's evictions = %v, want 1 (kept)", got)
	}
}

// TestHandler serves the metrics over HTTP: build_info and the Go collector's series are there.
func TestHandler(t *testing.T) {
	m := New(BuildInfo{Version: "v9", Revision: "0123abc"})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	if _, err := io.Copy(&body, resp.Body); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`redis_rebalancer_build_info{goversion="go`, `revision="0123abc",version="v9"} 1`, "go_goroutines", `redis_rebalancer_last_run_outcome{outcome="compliant"} 0`} {
		if !strings.Contains(body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
