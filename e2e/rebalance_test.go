// Package e2e holds the end-to-end tests: redis-rebalancer's commands run against a real
// control plane with kwok nodes and real redis-servers, set up by e2e/harness from
// internal/scenario's scenarios. It owns no support code; it may import e2e/harness, the
// product packages it drives (internal/cli, policies, rebalancer, redisctl) and the test-support
// layer (internal/scenario, redisctl/redistest).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/internal/cli"
	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl/redistest"
)

// stopRecord is what Redis said about a pod's node just before its server was stopped because
// the pod went away (an eviction, here).
type stopRecord struct {
	Pod  string
	UID  string
	Role policies.Role
	Err  string
	At   time.Time
}

// roleRecorder asks each Redis node for its ROLE at the moment its pod goes away: the runtime
// calls it before it stops the server, so the answer is Redis's own, at that moment.
type roleRecorder struct {
	redis *redisctl.Client
	mu    sync.Mutex
	stops []stopRecord
}

func (r *roleRecorder) beforeStop(pod *corev1.Pod, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rec := stopRecord{Pod: pod.Name, UID: string(pod.UID), At: time.Now()}
	reply, err := r.redis.Do(ctx, addr, "ROLE")
	if err != nil {
		rec.Err = err.Error()
	} else if arr, ok := reply.([]interface{}); ok && len(arr) > 0 {
		s, _ := arr[0].(string)
		rec.Role = policies.ParseRole(s)
	}
	r.mu.Lock()
	r.stops = append(r.stops, rec)
	r.mu.Unlock()
}

func (r *roleRecorder) records() []stopRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stopRecord(nil), r.stops...)
}

// result is what one end-to-end run gives the assertions.
type result struct {
	env    *harness.Env
	report report.Run
	stops  []stopRecord
	writer harness.WriterStats
	lost   error
	rc     *redisctl.Client
}

// runRebalancer lays out sc on a real control plane with kwok nodes and a real redis-server per
// pod, starts a writer (≥ 200 writes/s), waits until before() holds, runs `redis-rebalancer run`
// (the CLI, in process) with the writer running throughout, and collects what happened.
func runRebalancer(t *testing.T, sc scenario.Scenario, before func(context.Context, *harness.Env) error, extraArgs ...string) *result {
	t.Helper()
	rc, err := redisctl.New(redisctl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	rec := &roleRecorder{redis: rc}
	env := harness.SetupForTest(t, sc, harness.Options{BeforeStop: rec.beforeStop})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	if before != nil {
		if err := before(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	var seeds []string
	for _, s := range env.Runtime.Servers() {
		seeds = append(seeds, s.Addr)
	}
	w, err := harness.StartWriter(seeds, 250)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(); w.Close() })
	// Let the writer warm up so that it writes before, during and after the moves.
	if err := waitAcked(ctx, w, 200); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	cmd := cli.NewRootCommand()
	cmd.SetArgs(append([]string{"run", "--kubeconfig", env.Kubeconfig(), "-n", env.Namespace, "-o", "json",
		"--max-moves", "6", "--health-timeout", "1m", "--recreate-timeout", "2m", "--rejoin-timeout", "2m"}, extraArgs...))
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	runErr := cmd.ExecuteContext(ctx)
	t.Logf("redis-rebalancer run output:\n%s", stderr.String())
	if runErr != nil {
		t.Fatalf("redis-rebalancer run: %v", runErr)
	}
	res := &result{env: env, rc: rc}
	if err := json.Unmarshal(stdout.Bytes(), &res.report); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	// Keep writing a little after the last move, then stop and read everything back.
	if err := waitAcked(ctx, w, w.Stats().Acked+200); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	res.writer = w.Stats()
	res.lost = w.Verify(ctx)
	res.stops = rec.records()
	t.Logf("writer: %s", res.writer)
	return res
}

// assertSafeAndCompliant checks what every run must give: (a) every hard rule holds at the end;
// (b) every evicted pod was a replica when it was evicted, as Redis said at that moment; (c) the
// Redis cluster passes the full health gate (cluster_state:ok, all 16384 slots served, every
// master with an in-sync replica); (d) no acknowledged write lost, no write failed after the
// client's retries, at ≥ 200 writes/s. It returns the evictions and failovers made.
func assertSafeAndCompliant(t *testing.T, res *result) (evictions, failovers int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := res.env

	// (a)
	snap, err := observe.ReadSnapshot(ctx, env.Client(), env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	model, err := policies.Build(snap, policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(model.Clusters) != 1 {
		t.Fatalf("clusters = %d, want 1", len(model.Clusters))
	}
	c := model.Clusters[0]
	if vs := policies.Hard(c.Evaluate(c.Current())); len(vs) > 0 {
		t.Errorf("hard rules broken at the end: %+v", vs)
	}

	// (b)
	evicted := map[string]bool{}
	for _, cr := range res.report.Clusters {
		for _, m := range cr.Moves {
			if m.Evicted {
				evicted[m.Pod] = true
				evictions++
			}
			if m.Failover != nil {
				failovers++
			}
		}
	}
	if len(res.stops) != evictions {
		t.Errorf("redis servers stopped because their pod went away: %d, evictions reported: %d (%+v)", len(res.stops), evictions, res.stops)
	}
	for _, s := range res.stops {
		if !evicted[env.Namespace+"/"+s.Pod] {
			t.Errorf("pod %s went away but the report has no eviction of it", s.Pod)
		}
		if s.Role != policies.RoleReplica {
			t.Errorf("pod %s was evicted while Redis reported role %q (err %q)", s.Pod, s.Role, s.Err)
		}
	}

	// (c) New members (a Pending pod that got placed) join through the operator stand-in.
	var addrs []string
	for _, s := range env.Runtime.Servers() {
		addrs = append(addrs, s.Addr)
	}
	h, err := redistest.WaitFormed(ctx, res.rc, addrs, time.Minute)
	if err != nil {
		t.Errorf("redis health at the end: %v", err)
	} else if h.SlotsServed != redisctl.NumSlots {
		t.Errorf("slots served = %d, want %d", h.SlotsServed, redisctl.NumSlots)
	}

	// (d)
	if res.writer.Failed > 0 {
		t.Errorf("%d writes failed: %v", res.writer.Failed, res.writer.Failures)
	}
	if res.writer.Rate < 200 {
		t.Errorf("writer rate %.0f/s, want ≥ 200/s", res.writer.Rate)
	}
	if res.lost != nil {
		t.Error(res.lost)
	}
	t.Logf("moves: %d evictions, %d failovers; writer: %s", evictions, failovers, res.writer)
	return evictions, failovers
}

// TestPostScaleDown runs issue 2's scenario end to end: 5 shards × 2 pods left on 3 zones after
// a scale-down, four masters on n1. The fix needs a failover and an eviction.
func TestPostScaleDown(t *testing.T) {
	res := runRebalancer(t, scenario.PostScaleDown(), nil)
	evictions, failovers := assertSafeAndCompliant(t, res)
	if evictions < 1 || failovers < 1 {
		t.Errorf("the run made %d evictions and %d failovers; the scenario needs at least one of each", evictions, failovers)
	}
	assertAPIRequests(t, res.report, evictions)
}

// assertAPIRequests checks the run's API requests (issue 12, item 7): each observation lists
// each resource once (the lists of nodes, StatefulSets, PodDisruptionBudgets and volumes are as
// many as the observations, and pods are listed no fewer times), nothing is read object by
// object but the pods the executor waits for (at most one GET per poll of a re-creation wait),
// and each eviction is one dry run and one eviction.
func assertAPIRequests(t *testing.T, rep report.Run, evictions int) {
	t.Helper()
	count := map[string]int{}
	for _, r := range rep.APIRequests {
		count[r.Verb+" "+r.Resource] = r.Count
		t.Logf("API requests: %-6s %-30s %d", r.Verb, r.Resource, r.Count)
	}
	observations := count["list nodes"]
	if observations < 2 {
		t.Fatalf("list nodes = %d, want one per observation (at least 2): %v", observations, rep.APIRequests)
	}
	for _, res := range []string{"statefulsets.apps", "poddisruptionbudgets.policy", "persistentvolumeclaims", "persistentvolumes"} {
		if got := count["list "+res]; got != observations {
			t.Errorf("list %s = %d, want %d (one per observation, as list nodes)", res, got, observations)
		}
	}
	if got := count["list pods"]; got < observations {
		t.Errorf("list pods = %d, want at least %d (one per observation)", got, observations)
	}
	for _, res := range []string{"nodes", "statefulsets.apps", "poddisruptionbudgets.policy", "persistentvolumeclaims", "persistentvolumes"} {
		if got := count["get "+res]; got != 0 {
			t.Errorf("get %s = %d, want 0: observations list, they never read object by object", res, got)
		}
	}
	// A pod is read alone only while the executor waits for its re-creation: at most one GET
	// per poll (DefaultPollInterval) of each move's wait, plus the first.
	polls := 0
	for _, cr := range rep.Clusters {
		for _, m := range cr.Moves {
			for _, st := range m.Steps {
				if st.Name == report.StepRecreate {
					polls += int(st.Seconds/execute.DefaultPollInterval.Seconds()) + 2
				}
			}
		}
	}
	if got := count["get pods"]; got > polls {
		t.Errorf("get pods = %d, more than the %d polls of the re-creation waits: something reads pods one by one", got, polls)
	}
	if got := count["create pods/eviction"]; got != 2*evictions {
		t.Errorf("create pods/eviction = %d, want %d (a dry run and an eviction per eviction made)", got, 2*evictions)
	}
}

// TestSeedDeadlock runs seed 000's deadlock (supplement 2) end to end: shard 2's replica is
// Pending forever until a replica of shard 1 is evicted; the scheduler then places both.
func TestSeedDeadlock(t *testing.T) {
	sc := scenario.SeedDeadlock()
	pending := sc.PodName(2, 1)
	res := runRebalancer(t, sc, func(ctx context.Context, env *harness.Env) error {
		// Wait until kube-scheduler has tried and failed to place the pod.
		return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := env.Client().CoreV1().Pods(env.Namespace).Get(ctx, pending, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					return true, nil
				}
			}
			return false, nil
		})
	})
	evictions, failovers := assertSafeAndCompliant(t, res)
	if evictions < 1 || failovers != 0 {
		t.Errorf("the run made %d evictions and %d failovers; the deadlock needs one replica eviction and no failover", evictions, failovers)
	}
	p, err := res.env.Client().CoreV1().Pods(res.env.Namespace).Get(context.Background(), pending, metav1.GetOptions{})
	if err != nil || p.Spec.NodeName == "" {
		t.Errorf("%s still not scheduled (%v)", pending, err)
	}
}

// waitAcked waits until the writer has n acknowledged writes (30 s at most).
func waitAcked(ctx context.Context, w *harness.Writer, n int) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return w.Stats().Acked >= n, nil
	})
	if err != nil {
		return fmt.Errorf("writer stalled before %d writes: %s (%v): %w", n, w.Stats(), w.Stats().Failures, err)
	}
	return nil
}
