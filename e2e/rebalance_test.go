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
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/internal/cli"
	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
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

// TestPostScaleDown runs issue 2's scenario end to end: a real control plane with kwok nodes, a
// real redis-server per pod, a writer at ≥200 writes/s throughout, and `redis-rebalancer run`
// (the CLI, in process) against it.
func TestPostScaleDown(t *testing.T) {
	rc, err := redisctl.New(redisctl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	rec := &roleRecorder{redis: rc}
	env := harness.SetupForTest(t, scenario.PostScaleDown(), harness.Options{BeforeStop: rec.beforeStop})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

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
	cmd.SetArgs([]string{"run", "--kubeconfig", env.Kubeconfig(), "-n", env.Namespace, "-o", "json",
		"--max-moves", "6", "--health-timeout", "1m", "--recreate-timeout", "2m", "--rejoin-timeout", "2m"})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	runErr := cmd.ExecuteContext(ctx)
	t.Logf("redis-rebalancer run output:\n%s", stderr.String())
	if runErr != nil {
		t.Fatalf("redis-rebalancer run: %v", runErr)
	}
	var rep rebalancer.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	// Keep writing a little after the last move, then stop.
	if err := waitAcked(ctx, w, w.Stats().Acked+200); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	stats := w.Stats()
	t.Logf("writer: %s", stats)

	// (a) The four rules hold at the end (and every other hard rule too).
	snap, err := rebalancer.ReadSnapshot(ctx, env.Client(), env.Namespace)
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

	// (b) Every evicted pod was a replica when it was evicted, as Redis said at that moment.
	evicted := map[string]bool{}
	failovers := 0
	for _, cr := range rep.Clusters {
		for _, m := range cr.Moves {
			if m.Evicted {
				evicted[m.Pod] = true
			}
			if m.Failover != nil {
				failovers++
			}
		}
	}
	if rep.Moves() < 1 || failovers < 1 {
		t.Errorf("the run made %d evictions and %d failovers; the scenario needs at least one of each", rep.Moves(), failovers)
	}
	stops := rec.records()
	if len(stops) != rep.Moves() {
		t.Errorf("redis servers stopped because their pod went away: %d, evictions reported: %d (%+v)", len(stops), rep.Moves(), stops)
	}
	for _, s := range stops {
		if !evicted[env.Namespace+"/"+s.Pod] {
			t.Errorf("pod %s went away but the report has no eviction of it", s.Pod)
		}
		if s.Role != policies.RoleReplica {
			t.Errorf("pod %s was evicted while Redis reported role %q (err %q)", s.Pod, s.Role, s.Err)
		}
	}

	// (c) cluster_state:ok with all 16384 slots served (the full health gate, in fact).
	var addrs []string
	for _, s := range env.Runtime.Servers() {
		addrs = append(addrs, s.Addr)
	}
	h, err := rc.CheckHealth(ctx, addrs, redisctl.HealthOptions{})
	if err != nil {
		t.Errorf("redis health at the end: %v", err)
	} else if h.SlotsServed != redisctl.NumSlots {
		t.Errorf("slots served = %d, want %d", h.SlotsServed, redisctl.NumSlots)
	}

	// (d) No acknowledged write lost; no write failed after the client's retries.
	if stats.Failed > 0 {
		t.Errorf("%d writes failed: %v", stats.Failed, stats.Failures)
	}
	if stats.Rate < 200 {
		t.Errorf("writer rate %.0f/s, want ≥ 200/s", stats.Rate)
	}
	if err := w.Verify(ctx); err != nil {
		t.Error(err)
	}
	t.Logf("moves: %d evictions, %d failovers; writer: %s", rep.Moves(), failovers, stats)
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
