package execute

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/tools/events"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestGracefulStop asks for a graceful stop (Config.Stop) at several points of post-scale-down's
// one move (fail redis-s3-0 over, evict it) and checks where the move stopped, that the step in
// flight finished (a request) or was abandoned at once (a wait), and what was disrupted.
func TestGracefulStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup gets stop, which closes the Stop channel (once).
		setup             func(tb *testbed, stop func())
		before            bool // stop before Run
		lastStep, outcome string
		reason            string
		failovers         int
		evicted           bool
	}{
		{
			name: "stop before the run → no cluster started; nothing disrupted", before: true,
			reason: "graceful stop: the run stopped before this cluster's turn",
		},
		{
			name: "stop during the health gate's wait → the wait is abandoned at once; nothing disrupted",
			setup: func(tb *testbed, stop func()) {
				tb.redis.reasons = func(int) []redisctl.Reason {
					stop()
					return []redisctl.Reason{{Code: redisctl.ReasonReplicaLinkDown, Addr: "10.0.0.1:6379", Message: "down"}}
				}
			},
			lastStep: report.StepHealthGate, outcome: report.OutcomeSkip,
			reason: "graceful stop: healthGate abandoned (a wait: abandoning it disrupts nothing): nothing was disrupted",
		},
		{
			name: "stop during the failover → the failover finishes and is verified; stopped before the drain; not evicted",
			setup: func(tb *testbed, stop func()) {
				tb.redis.failover = func(string) error { stop(); return nil }
			},
			lastStep: report.StepDrain, outcome: report.OutcomeSkip, failovers: 1,
			reason: "graceful stop: stopped before drain: the master was failed over and is a replica now; nothing was evicted",
		},
		{
			name: "stop during the eviction request → it finishes; stopped before the re-creation wait",
			setup: func(tb *testbed, stop func()) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) {
					if !dryRun {
						stop()
					}
					return false, nil
				}
			},
			lastStep: report.StepRecreate, outcome: report.OutcomeSkip, failovers: 1, evicted: true,
			reason: "graceful stop: stopped before recreate: the pod was evicted; its StatefulSet re-creates it",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, scenario.PostScaleDown())
			ch, stop := stopChannel()
			if tc.setup != nil {
				tb.set(func() { tc.setup(tb, stop) })
			}
			if tc.before {
				stop()
			}
			cr := runStopped(t, tb, ch).Clusters[0]
			if cr.StoppedBy != report.StoppedGracefulStop || !strings.HasPrefix(cr.Stopped, tc.reason) {
				t.Errorf("stopped by %q: %q, want %q: %q…", cr.StoppedBy, cr.Stopped, report.StoppedGracefulStop, tc.reason)
			}
			// Post-scale-down's plan ends with two failover steps (MasterQuorum) after its eviction:
			// a run stopped before them never complies, even when the evicted pod is back.
			if cr.Compliant {
				t.Errorf("compliant = true, want false: the plan's failover steps were not made")
			}
			if tc.lastStep == "" {
				if len(cr.Moves) != 0 {
					t.Errorf("moves: %+v, want none", cr.Moves)
				}
			} else {
				if len(cr.Moves) != 1 {
					t.Fatalf("moves = %d, want 1", len(cr.Moves))
				}
				if diff := cmp.Diff(stepsUpTo(tc.lastStep, tc.outcome), stepNames(cr.Moves[0])); diff != "" {
					t.Errorf("steps (-want +got):\n%s", diff)
				}
			}
			if got := len(tb.redis.called("failover")); got != tc.failovers {
				t.Errorf("failovers = %d, want %d", got, tc.failovers)
			}
			if got := len(tb.evicted()) > 0; got != tc.evicted {
				t.Errorf("evicted = %v, want %v", got, tc.evicted)
			}
		})
	}
}

// stopChannel returns a graceful-stop channel (Config.Stop) and the function that closes it, once.
func stopChannel() (chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// runStopped runs tb's executor with Config.Stop = ch and a one-minute health timeout, fails the
// test on an error, and checks that the run took under 30 s: a wait not abandoned at the stop
// would have lasted the health timeout.
func runStopped(t *testing.T, tb *testbed, ch chan struct{}) *report.Run {
	t.Helper()
	start := time.Now()
	rep, err := runExecutor(t, tb, func(c *Config) {
		c.Stop = ch
		c.HealthTimeout = time.Minute
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run took %s: a wait was not abandoned", d)
	}
	return rep
}

// TestGracefulStopFailoverStep stops the run during the health gate of a plan's failover step
// (role-only: the plan is one failover step): its waits are waits too, abandoned at once, and
// nothing is failed over.
func TestGracefulStopFailoverStep(t *testing.T) {
	tb := newTestbed(t, scenario.RoleOnly())
	ch, stop := stopChannel()
	tb.set(func() {
		tb.redis.reasons = func(int) []redisctl.Reason {
			stop()
			return []redisctl.Reason{{Code: redisctl.ReasonReplicaLinkDown, Addr: "10.0.0.1:6379", Message: "down"}}
		}
	})
	cr := runStopped(t, tb, ch).Clusters[0]
	want := "graceful stop: healthGate abandoned (a wait: abandoning it disrupts nothing): nothing was disrupted"
	if cr.StoppedBy != report.StoppedGracefulStop || cr.Stopped != want {
		t.Errorf("stopped by %q: %q, want %q: %q", cr.StoppedBy, cr.Stopped, report.StoppedGracefulStop, want)
	}
	if len(cr.Moves) != 1 || cr.Moves[0].Kind != plan.KindFailover {
		t.Fatalf("moves: %+v, want one failover step", cr.Moves)
	}
	wantSteps := []string{report.StepWindow + " " + report.OutcomeContinue, report.StepHealthGate + " " + report.OutcomeSkip}
	if diff := cmp.Diff(wantSteps, stepNames(cr.Moves[0])); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if got := tb.redis.called("failover"); len(got) != 0 {
		t.Errorf("failovers %v, want none", got)
	}
}

// TestGracefulStopBeforeAClustersTurn stops the run while the first of two clusters moves (one
// at a time): the second cluster is never started and says so.
func TestGracefulStopBeforeAClustersTurn(t *testing.T) {
	tb := newTestbed(t, twoClusters()...)
	ch := make(chan struct{})
	var once sync.Once
	tb.set(func() {
		tb.redis.failover = func(string) error { once.Do(func() { close(ch) }); return nil }
	})
	rep, err := runExecutor(t, tb, func(c *Config) { c.Stop = ch })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Clusters {
		got = append(got, c.Name+": "+c.StoppedBy)
	}
	if diff := cmp.Diff([]string{rep.Clusters[0].Name + ": gracefulStop", rep.Clusters[1].Name + ": gracefulStop"}, got); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if len(rep.Clusters[1].Moves) != 0 || !strings.Contains(rep.Clusters[1].Stopped, "before this cluster's turn") {
		t.Errorf("second cluster: %+v", rep.Clusters[1])
	}
}

// observed records what an Observer is told.
type observed struct {
	mu                             sync.Mutex
	steps, failovers, evictions    []string
	moves                          []string
	clusters                       []string
	violationsBefore, violationsAt int
}

func (o *observed) Step(c string, s report.Step) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps = append(o.steps, s.Name+" "+s.Outcome)
}
func (o *observed) Failover(c string, r FailoverResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failovers = append(o.failovers, c+" "+string(r))
}
func (o *observed) Eviction(c string, r EvictionResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evictions = append(o.evictions, c+" "+string(r))
}
func (o *observed) Move(c string, m report.MoveResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.moves = append(o.moves, c+" "+m.Pod+" "+m.Outcome)
}
func (o *observed) Cluster(cr report.ClusterRun) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clusters = append(o.clusters, fmt.Sprintf("%s/%s compliant=%v", cr.Namespace, cr.Name, cr.Compliant))
	o.violationsBefore += len(cr.Before)
	o.violationsAt += len(policies.Hard(cr.After))
}

// recorded drains a FakeRecorder's events.
func recorded(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestObserverAndEvents runs post-scale-down's plan (an eviction, two failover steps) and checks what the Observer is told and
// which Kubernetes Events are recorded: the failover on the old master's pod, the eviction by the
// descheduler's PodEvictor (not twice); then a move refused by a PodDisruptionBudget records a
// skip, and a cluster with no plan an event on its StatefulSets.
func TestObserverAndEvents(t *testing.T) {
	t.Run("a move made", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		obs := &observed{}
		rec := events.NewFakeRecorder(100)
		rep, err := runExecutor(t, tb, func(c *Config) { c.Observer, c.Recorder = obs, rec })
		if err != nil {
			t.Fatal(err)
		}
		key := rep.Clusters[0].Namespace + "/" + rep.Clusters[0].Name
		var moves []string
		for _, m := range rep.Clusters[0].Moves {
			moves = append(moves, key+" "+m.Pod+" continue")
		}
		// The plan: the eviction of a master (failed over first), then two failover steps
		// (MasterQuorum).
		want := observed{
			steps:     append(append(stepsUpTo(report.StepReobserve, report.OutcomeContinue), failoverStepNames...), failoverStepNames...),
			failovers: []string{key + " succeeded", key + " succeeded", key + " succeeded"}, evictions: []string{key + " evicted"},
			moves:    moves,
			clusters: []string{key + " compliant=true"},
		}
		if len(moves) != 3 {
			t.Errorf("moves = %d, want 3 (an eviction, two failover steps)", len(moves))
		}
		if diff := cmp.Diff(want.steps, obs.steps); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		for _, f := range []struct{ want, got []string }{{want.failovers, obs.failovers}, {want.evictions, obs.evictions}, {want.moves, obs.moves}, {want.clusters, obs.clusters}} {
			if diff := cmp.Diff(f.want, f.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		}
		if obs.violationsBefore == 0 || obs.violationsAt != 0 {
			t.Errorf("violations before %d, hard ones after %d; want some, then none", obs.violationsBefore, obs.violationsAt)
		}
		got := recorded(rec)
		wantEvents := []string{
			"Normal RedisFailover master redis-s3-0 failed over to its in-sync replica redis-s3-1",
			"Normal RedisRebalance pod eviction from",
			"Normal RedisFailover master redis-s2-0 failed over to its in-sync replica redis-s2-1",
			"Normal RedisFailover master redis-s4-0 failed over to its in-sync replica redis-s4-1",
		}
		if len(got) != len(wantEvents) {
			t.Fatalf("events %q, want %d: %q…", got, len(wantEvents), wantEvents)
		}
		for i := range wantEvents {
			if !strings.HasPrefix(got[i], wantEvents[i]) {
				t.Errorf("event %d = %q, want %q…", i, got[i], wantEvents[i])
			}
		}
	})
	t.Run("a move skipped", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		tb.set(func() {
			tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) { return dryRun, tooManyRequests() }
		})
		obs := &observed{}
		rec := events.NewFakeRecorder(100)
		if _, err := runExecutor(t, tb, func(c *Config) { c.Observer, c.Recorder = obs, rec }); err != nil {
			t.Fatal(err)
		}
		got := recorded(rec)
		want := []string{
			"Warning RedisMoveSkipped move of redis/redis-s3-0 skipped at step pdbDryRun: PodDisruptionBudget forbids",
			"Warning RedisClusterNotFixed Redis cluster redis/",
		}
		// One RedisClusterNotFixed per StatefulSet of the cluster.
		if len(got) < len(want) {
			t.Fatalf("events %q, want %q…", got, want)
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("event %d = %q, want %q…", i, got[i], want[i])
			}
		}
		if len(obs.failovers) != 0 || len(obs.evictions) != 0 {
			t.Errorf("failovers %v, evictions %v; want none", obs.failovers, obs.evictions)
		}
	})
	t.Run("dry run records nothing", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		rec := events.NewFakeRecorder(100)
		if _, err := runExecutor(t, tb, func(c *Config) { c.DryRun, c.Recorder = true, rec }); err != nil {
			t.Fatal(err)
		}
		if got := recorded(rec); len(got) != 0 {
			t.Errorf("events %q, want none", got)
		}
	})
}
