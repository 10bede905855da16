package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

func TestNew(t *testing.T) {
	rc, err := redisctl.New(redisctl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	client := fake.NewClientset()
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr error // nil: New succeeds; errAny: any error
	}{
		{name: "clients given → defaults filled", cfg: Config{Client: client, Redis: rc}},
		{name: "no Kubernetes client → error", cfg: Config{Redis: rc}, wantErr: errAny},
		{name: "negative MaxMoves → error", cfg: Config{Client: client, Redis: rc, MaxMoves: -1}, wantErr: errAny},
		{name: "negative MaxParallelClusters → error", cfg: Config{Client: client, Redis: rc, MaxParallelClusters: -1}, wantErr: errAny},
		{name: "a window that does not parse → error", cfg: Config{Client: client, Redis: rc, Window: window.Config{Windows: []window.Window{{Schedule: "nightly"}}}}, wantErr: errAny},
		{name: "ReleaseReplicaClaims → accepted: a move may release a replica's claims", cfg: Config{Client: client, Redis: rc, Policy: policies.Options{ReleaseReplicaClaims: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.cfg)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr == nil:
				c := e.cfg
				if c.MaxMoves != DefaultMaxMoves || c.MaxParallelClusters != DefaultMaxParallelClusters || c.FailoverTimeout != DefaultFailoverTimeout ||
					c.HealthTimeout != DefaultHealthTimeout || c.RecreateTimeout != DefaultRecreateTimeout || c.RejoinTimeout != DefaultRejoinTimeout || c.FullSyncTimeout != DefaultFullSyncTimeout ||
					c.DrainQuiet != DefaultDrainQuiet || c.DrainTimeout != DefaultDrainTimeout || c.RequestTimeout != DefaultRequestTimeout ||
					c.PollInterval != DefaultPollInterval || c.Out == nil || c.Clock == nil || !e.windows.Always() {
					t.Errorf("defaults not filled: %+v", c)
				}
			case err == nil:
				t.Fatal("New succeeded, want an error")
			case tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// errAny stands for any error in TestNew's table.
var errAny = errors.New("any error")

// runExecutor runs an Executor on tb with tb.config() changed by change, and logs its progress.
func runExecutor(t *testing.T, tb *testbed, change func(*Config)) (*report.Run, error) {
	t.Helper()
	cfg := tb.config()
	if change != nil {
		change(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := e.Run(ctx)
	t.Logf("progress:\n%s", tb.out.String())
	if rep == nil {
		t.Fatal("Run returned no report")
	}
	return rep, err
}

// tickingClock is the real clock, but every reading is step later than the one before, so that
// durations measured over a fake run that takes microseconds are whole milliseconds.
type tickingClock struct {
	clock.RealClock
	mu      sync.Mutex
	step, n time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += c.step
	return c.RealClock.Now().Add(c.n)
}

func (c *tickingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// stepNames returns the names of m's steps and the outcome of each.
func stepNames(m report.MoveResult) []string {
	var out []string
	for _, s := range m.Steps {
		out = append(out, s.Name+" "+s.Outcome)
	}
	return out
}

// allSteps are the names of a move's steps, in order.
var allSteps = []string{
	report.StepWindow, report.StepHealthGate, report.StepPlaceable, report.StepPDBDryRun, report.StepFailover, report.StepDrain,
	report.StepRoleCheck, report.StepEvict, report.StepRecreate, report.StepRejoin, report.StepReobserve,
}

// stepsUpTo returns "name continue" for every step before last, then "last outcome".
func stepsUpTo(last, outcome string) []string {
	var out []string
	for _, s := range allSteps {
		if s == last {
			return append(out, s+" "+outcome)
		}
		out = append(out, s+" "+report.OutcomeContinue)
	}
	return out
}

// failoverStepNames are the steps of a failover step of a plan, all continuing.
var failoverStepNames = []string{
	report.StepWindow + " continue", report.StepHealthGate + " continue", report.StepFailover + " continue",
	report.StepDrain + " continue", report.StepReobserve + " continue",
}

// TestRunMovesAMasterSafely runs post-scale-down's plan: one eviction, whose master is failed over
// first to the replica the plan names (every step continues), then two failover steps
// (MasterQuorum: n1 held 4 of the 5 masters, zone-a all 5); the cluster ends compliant and
// healthy.
func TestRunMovesAMasterSafely(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	clk := &tickingClock{step: time.Millisecond}
	rep, err := runExecutor(t, tb, func(c *Config) { c.Clock = clk })
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Clusters[0]
	if len(cr.Moves) != 3 {
		t.Fatalf("moves = %d, want 3 (an eviction, two failovers): %+v", len(cr.Moves), cr.Moves)
	}
	m := cr.Moves[0]
	if diff := cmp.Diff(stepsUpTo(report.StepReobserve, report.OutcomeContinue), stepNames(m)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if m.Kind != plan.KindEvict || !m.Evicted || m.Failover == nil || m.RoleAtEviction != policies.RoleReplica || m.Outcome != report.OutcomeContinue {
		t.Errorf("move: %+v", m)
	}
	for _, f := range cr.Moves[1:] {
		if diff := cmp.Diff(failoverStepNames, stepNames(f)); diff != "" {
			t.Errorf("failover step's steps (-want +got):\n%s", diff)
		}
		if f.Kind != plan.KindFailover || f.Evicted || f.Failover == nil || f.Failover.OldMaster != podName(f.Pod) || f.To != "" {
			t.Errorf("failover step: %+v", f)
		}
	}
	// The cluster's time spans its moves' (a deferred assignment once left it at 0 in the report).
	if cr.Seconds < m.Seconds || m.Seconds <= 0 {
		t.Errorf("cluster seconds %v, first move's %v: want the cluster's ≥ the move's > 0", cr.Seconds, m.Seconds)
	}
	if got, want := tb.evicted(), []string{podName(m.Pod)}; !cmp.Equal(got, want) {
		t.Errorf("evicted %v, want %v", got, want)
	}
	// Each failover is made on the replica the plan named.
	if fo := tb.redis.called("failover"); len(fo) != 3 || rep.Failovers() != 2 {
		t.Errorf("failovers: %v (failover steps %d), want 3 (2 steps)", fo, rep.Failovers())
	}
	if !cr.Compliant || !cr.PlacementCompliant || cr.Health.State != observe.HealthHealthy || cr.Stopped != "" || cr.Error != "" {
		t.Errorf("cluster at the end: compliant %v, placement %v, health %+v, stopped %q, error %q", cr.Compliant, cr.PlacementCompliant, cr.Health, cr.Stopped, cr.Error)
	}
	if rep.Limits.Evicted != 1 || !rep.Window.Open || len(rep.Window.Windows) != 0 {
		t.Errorf("run: limits %+v, window %+v", rep.Limits, rep.Window)
	}
	// Each observation lists the pods once, and the waits that follow one judge its pods: pods
	// are listed once per observation (as nodes are) plus once per health gate (one round each
	// here: the cluster is healthy at once).
	lists := map[string]int{}
	for _, a := range tb.client.Actions() {
		if a.GetVerb() == "list" {
			lists[a.GetResource().Resource]++
		}
	}
	if got, want := lists["pods"], lists["nodes"]+len(cr.Moves); got != want {
		t.Errorf("list pods = %d, want %d (%d observations, %d health gates)", got, want, lists["nodes"], len(cr.Moves))
	}
	checkJSONContract(t, rep)
}

// checkJSONContract checks that the report follows the check/plan JSON contract: camelCase names,
// lists never null, durations as seconds (numbers), every documented field present.
func checkJSONContract(t *testing.T, rep *report.Run) {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "" || unicode.IsUpper(rune(k[0])) {
					t.Errorf("%s: field %q is not camelCase", path, k)
				}
				if x == nil && k != "closes" && k != "nextOpen" {
					t.Errorf("%s.%s is null", path, k)
				}
				walk(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		}
	}
	walk("run", doc)
	cluster := doc["clusters"].([]any)[0].(map[string]any)
	move := cluster["moves"].([]any)[0].(map[string]any)
	step := move["steps"].([]any)[0].(map[string]any)
	for _, f := range []struct {
		obj  map[string]any
		name string
	}{
		{doc, "window"}, {doc, "limits"}, {doc, "seconds"},
		{cluster, "violations"}, {cluster, "violationsAfter"}, {cluster, "placementCompliant"}, {cluster, "health"}, {cluster, "compliant"}, {cluster, "seconds"},
		{move, "pod"}, {move, "from"}, {move, "to"}, {move, "failover"}, {move, "roleAtEviction"}, {move, "evicted"}, {move, "outcome"}, {move, "seconds"},
		{step, "name"}, {step, "outcome"}, {step, "seconds"},
	} {
		if _, ok := f.obj[f.name]; !ok {
			t.Errorf("field %q missing", f.name)
		}
	}
	if _, ok := move["seconds"].(float64); !ok {
		t.Errorf("move seconds %v is not a number", move["seconds"])
	}
	// The report reads back as itself.
	var back report.Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*rep, back, cmpopts.IgnoreFields(observe.Health{}, "Redis")); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// replyError is a Redis error reply (go-redis's redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func tooManyRequests() error {
	return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
}

// TestMoveBranches drives each way a move can stop, on post-scale-down (one move: fail the
// master redis-s3-0 over and evict it), and checks where it stopped, with what first reason, and
// what it disrupted.
func TestMoveBranches(t *testing.T) {
	linkDown := redisctl.Reason{Code: redisctl.ReasonReplicaLinkDown, Addr: "10.0.0.1:6379", Message: "master_link_status:down, down for 3 s"}
	for _, tc := range []struct {
		name  string
		setup func(tb *testbed)
		// want: the steps (last one with its outcome), the prefix of the first reason, whether
		// Run returns an error, failovers made and pods evicted.
		lastStep, outcome string
		reason            string
		stoppedBy         string
		wantErr           bool
		failovers         int
		evicted           bool
		// shards, when set, is the shard source (the default, auto, follows Redis's grouping).
		shards policies.ShardSourceKind
	}{
		{
			name: "PodDisruptionBudget 429 at the dry run → skip at pdbDryRun; nothing disrupted",
			setup: func(tb *testbed) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) { return dryRun, tooManyRequests() }
			},
			lastStep: report.StepPDBDryRun, outcome: report.OutcomeSkip, reason: "PodDisruptionBudget forbids evicting redis-s3-0 now: Cannot evict pod",
		},
		{
			name: "overlapping PodDisruptionBudgets (500) at the dry run → abort; nothing disrupted",
			setup: func(tb *testbed) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) {
					return dryRun, apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
				}
			},
			lastStep: report.StepPDBDryRun, outcome: report.OutcomeAbort, wantErr: true,
			reason: "eviction dry run for redis-s3-0: Internal error occurred: This pod has more than one PodDisruptionBudget",
		},
		{
			name: "429 at the eviction after the failover → skip at evict; failed over, not evicted",
			setup: func(tb *testbed) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) { return !dryRun, tooManyRequests() }
			},
			lastStep: report.StepEvict, outcome: report.OutcomeSkip, failovers: 1,
			reason: `PodDisruptionBudget refused the eviction of redis-s3-0: error when evicting pod (ignoring) "redis-s3-0"`,
		},
		{
			name: "the eviction guard's 429 at the eviction after the failover → skip at evict, the guard named; failed over, not evicted",
			setup: func(tb *testbed) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) {
					return !dryRun, apierrors.NewTooManyRequests(`admission webhook "evictions.guard.rebalancer.redis.io" denied the request: redis-rebalancer guard: ShardExposed: pod redis/redis-s3-0 is the last in-sync replica`, 0)
				}
			},
			lastStep: report.StepEvict, outcome: report.OutcomeSkip, failovers: 1,
			reason: `the eviction guard refused the eviction of redis-s3-0: error when evicting pod (ignoring) "redis-s3-0"`,
		},
		{
			name: "the named replica is not in sync → failover refused by Redis's pre-check, skip; nothing disrupted",
			setup: func(tb *testbed) {
				tb.redis.failover = func(addr string) error {
					return fmt.Errorf("redisctl: failover %s: %w with master 10.0.3.0:6379: replica_link_down", addr, redisctl.ErrNotInSync)
				}
			},
			lastStep: report.StepFailover, outcome: report.OutcomeSkip, failovers: 1, reason: "failover refused: redisctl: failover 10.0.3.1:6379: replica not in sync",
		},
		{
			name: "shards from owners, the named replica not the master's replica in Redis → failover refused, skip; nothing disrupted",
			setup: func(tb *testbed) {
				tb.redis.nodes[addrOf("10.0.3.1")].masterAddr = addrOf("10.0.2.0")
			},
			shards:   policies.ShardOwner,
			lastStep: report.StepFailover, outcome: report.OutcomeSkip,
			reason: "failover refused: the replica the plan names is not this master's replica in Redis: redis-s3-1 (master redis-s3-0)",
		},
		{
			name: "Redis answers CLUSTER FAILOVER with an error reply → skip",
			setup: func(tb *testbed) {
				tb.redis.failover = func(addr string) error {
					return fmt.Errorf("redisctl: failover %s: %w", addr, replyError("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE"))
				}
			},
			lastStep: report.StepFailover, outcome: report.OutcomeSkip, failovers: 1, reason: "failover refused: redisctl: failover 10.0.3.1:6379: ERR Master is down",
		},
		{
			name: "failover not verified in time → abort; not evicted",
			setup: func(tb *testbed) {
				tb.redis.failover = func(addr string) error {
					return fmt.Errorf("redisctl: failover %s: %w after 1s (mode default): replica role slave", addr, redisctl.ErrFailoverNotVerified)
				}
			},
			lastStep: report.StepFailover, outcome: report.OutcomeAbort, wantErr: true, failovers: 1,
			reason: "failover: redisctl: failover 10.0.3.1:6379: failover not verified after 1s",
		},
		{
			name: "Redis says master at the role check → skip; not evicted",
			setup: func(tb *testbed) {
				tb.redis.role = func(string) (interface{}, error) { return []interface{}{"master", int64(0), []interface{}{}}, nil }
			},
			lastStep: report.StepRoleCheck, outcome: report.OutcomeSkip, failovers: 1,
			reason: "role check: redis-s3-0 reports role master just before the eviction; not evicting it",
		},
		{
			name: "ROLE not answered → abort; not evicted",
			setup: func(tb *testbed) {
				tb.redis.role = func(addr string) (interface{}, error) {
					return nil, errors.New("redisctl: " + addr + ": role: i/o timeout")
				}
			},
			lastStep: report.StepRoleCheck, outcome: report.OutcomeAbort, wantErr: true, failovers: 1,
			reason: "role check: read ROLE of 10.0.3.0:6379: redisctl: 10.0.3.0:6379: role: i/o timeout",
		},
		{
			name: "a replica's link stays down → the health gate skips with Redis's reason; nothing disrupted",
			setup: func(tb *testbed) {
				tb.redis.reasons = func(int) []redisctl.Reason { return []redisctl.Reason{linkDown} }
			},
			lastStep: report.StepHealthGate, outcome: report.OutcomeSkip,
			reason: "health gate: not healthy after 300ms: resyncing: replica_link_down 10.0.0.1:6379: master_link_status:down",
		},
		{
			name: "the API server fails the gate's pod list → abort naming the API error, not a cut-short poll",
			setup: func(tb *testbed) {
				tb.client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.(k8stesting.ListAction).GetListRestrictions().Labels.Empty() {
						return false, nil, nil
					}
					return true, nil, errConnRefused
				})
			},
			lastStep: report.StepHealthGate, outcome: report.OutcomeAbort, wantErr: true,
			reason: `health gate: not healthy after 300ms: list pods: Get "https://127.0.0.1:6443/api/v1/nodes": dial tcp 127.0.0.1:6443: connect: connection refused`,
		},
		{
			name: "every node cordoned after the plan → the placeability check skips before any failover",
			setup: func(tb *testbed) {
				var once sync.Once
				tb.redis.reasons = func(int) []redisctl.Reason { once.Do(tb.cordonAll); return nil }
			},
			lastStep: report.StepPlaceable, outcome: report.OutcomeSkip,
			reason: "placeability: redis-s3-0, re-created from its template now, fits no node: 0/6 nodes are available: 6 node(s) were unschedulable [n1 n2 n3 n4 n5 n6]",
		},
		{
			name: "the evicted pod cannot be placed → abort at recreate with the scheduler's reason",
			setup: func(tb *testbed) {
				tb.recreate = func(p *corev1.Pod) {
					fixture.Unschedulable()(p)
					p.Status.Conditions[0].Message = "0/6 nodes are available: 6 node(s) were unschedulable."
				}
			},
			lastStep: report.StepRecreate, outcome: report.OutcomeAbort, wantErr: true, failovers: 1, evicted: true,
			reason: "re-creation: pod redis-s3-0 not back after 300ms: re-created, not scheduled yet: 0/6 nodes are available: 6 node(s) were unschedulable.",
		},
		{
			name: "the re-created node does not rejoin in time → abort at rejoin",
			setup: func(tb *testbed) {
				tb.redis.rejoin = func(addr string) error {
					return fmt.Errorf("redisctl: rejoin %s: %w after 300ms: not in sync: replica_link_down", addr, redisctl.ErrRejoinTimeout)
				}
			},
			lastStep: report.StepRejoin, outcome: report.OutcomeAbort, wantErr: true, failovers: 1, evicted: true,
			reason: "rejoin: redisctl: rejoin 10.0.3.0:6379: node not rejoined after 300ms",
		},
		{
			name: "the API server goes down at the eviction → abort with the eviction's error",
			setup: func(tb *testbed) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) {
					if dryRun {
						return false, nil
					}
					tb.set(func() { tb.apiDown = true })
					return true, errConnRefused
				}
			},
			lastStep: report.StepEvict, outcome: report.OutcomeAbort, wantErr: true, failovers: 1,
			reason: `eviction: evict redis-s3-0: Get "https://127.0.0.1:6443/api/v1/nodes": dial tcp 127.0.0.1:6443: connect: connection refused`,
		},
		{
			name:     "an eviction limit of 0 → skip before any failover",
			setup:    func(tb *testbed) {},
			lastStep: report.StepPDBDryRun, outcome: report.OutcomeSkip, stoppedBy: report.StoppedEvictionLimit,
			reason: "eviction limit: maximum number of evicted pods per node reached (node n1, maxPodsToEvictPerNode 0)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, scenario.PostScaleDown())
			tb.set(func() { tc.setup(tb) })
			rep, err := runExecutor(t, tb, func(c *Config) {
				if tc.stoppedBy == report.StoppedEvictionLimit {
					c.MaxPodsToEvictPerNode = ptr.To[uint](0)
				}
				if tc.shards != "" {
					c.Policy.ShardSource.Kind = tc.shards
				}
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run error %v, want an error: %v", err, tc.wantErr)
			}
			cr := rep.Clusters[0]
			if len(cr.Moves) != 1 {
				t.Fatalf("moves = %d, want 1", len(cr.Moves))
			}
			m := cr.Moves[0]
			if diff := cmp.Diff(stepsUpTo(tc.lastStep, tc.outcome), stepNames(m)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			// The first real reason, everywhere it is reported.
			if !strings.HasPrefix(cr.Stopped, tc.reason) {
				t.Errorf("stopped %q, want it to start with %q", cr.Stopped, tc.reason)
			}
			last := m.Steps[len(m.Steps)-1]
			if last.Reason != cr.Stopped || m.Outcome != tc.outcome {
				t.Errorf("last step %+v, move outcome %q; the cluster stopped with %q", last, m.Outcome, cr.Stopped)
			}
			wantBy := tc.stoppedBy
			if wantBy == "" {
				wantBy = tc.lastStep
			}
			if cr.StoppedBy != wantBy {
				t.Errorf("stoppedBy %q, want %q", cr.StoppedBy, wantBy)
			}
			if tc.wantErr {
				if cr.Error != cr.Stopped || m.Error != cr.Stopped || !strings.Contains(err.Error(), "cluster redis/redis: "+tc.reason) {
					t.Errorf("error: cluster %q, move %q, Run %q; want the stop reason %q", cr.Error, m.Error, err, tc.reason)
				}
			} else if m.Skipped != cr.Stopped {
				t.Errorf("move skipped %q, want %q", m.Skipped, cr.Stopped)
			}
			if got := len(tb.redis.called("failover")); got != tc.failovers {
				t.Errorf("failovers = %d, want %d", got, tc.failovers)
			}
			if got := len(tb.evicted()) > 0; got != tc.evicted || m.Evicted != tc.evicted {
				t.Errorf("evicted: API %v, report %v; want %v", tb.evicted(), m.Evicted, tc.evicted)
			}
			if cr.Compliant && !tc.evicted {
				t.Error("the cluster complies after a move stopped before its eviction")
			}
		})
	}
}

// TestFinalObservationKeepsTheFirstReason: with the API server down from the eviction on, the
// failing final observation is reported beside the eviction's error, never instead of it.
func TestFinalObservationKeepsTheFirstReason(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	tb.set(func() {
		tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) {
			if dryRun {
				return false, nil
			}
			tb.set(func() { tb.apiDown = true })
			return true, errConnRefused
		}
	})
	rep, err := runExecutor(t, tb, nil)
	if err == nil || !strings.Contains(err.Error(), "eviction: evict redis-s3-0") || strings.Contains(err.Error(), "list nodes") {
		t.Fatalf("Run error %v, want the eviction's error and not the final observation's", err)
	}
	cr := rep.Clusters[0]
	if !strings.HasPrefix(cr.Error, "eviction: evict redis-s3-0") || !strings.Contains(cr.ObserveAfterError, "list nodes") {
		t.Errorf("error %q, observe-after error %q", cr.Error, cr.ObserveAfterError)
	}
	if cr.Health.State != observe.HealthUnknown || cr.Compliant {
		t.Errorf("health %+v, compliant %v; want unknown, not compliant", cr.Health, cr.Compliant)
	}
}

// TestHealthGateWaitsForResync: a cluster resyncing when the run starts (a killed run's replica
// catching up) is waited for; the move goes on once it is healthy.
func TestHealthGateWaitsForResync(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	tb.redis.reasons = func(n int) []redisctl.Reason {
		if n <= 3 {
			return []redisctl.Reason{{Code: redisctl.ReasonReplicaLinkDown, Addr: "10.0.0.1:6379", Message: "master_link_status:down"}}
		}
		return nil
	}
	rep, err := runExecutor(t, tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cr := rep.Clusters[0]; !cr.Compliant || len(cr.Moves) != 3 || !cr.Moves[0].Evicted {
		t.Errorf("cluster: compliant %v, moves %+v", cr.Compliant, cr.Moves)
	}
	if !strings.Contains(tb.out.String(), "waiting for a healthy cluster: resyncing: replica_link_down 10.0.0.1:6379") {
		t.Error("the progress does not say what the gate waited for")
	}
}

// compliantPlacement is post-scale-down's cluster placed so that every hard rule holds.
func compliantPlacement() scenario.Scenario {
	return scenario.PostScaleDown().Placed([][]string{{"n1", "n3"}, {"n2", "n4"}, {"n5", "n1"}, {"n3", "n6"}, {"n4", "n6"}})
}

// TestResyncingIsNotCompliant: nothing to move, but a replica's link is down → the run says
// resyncing, not compliant, and makes no move.
func TestResyncingIsNotCompliant(t *testing.T) {
	tb := newTestbed(t, compliantPlacement())
	tb.redis.reasons = func(int) []redisctl.Reason {
		return []redisctl.Reason{{Code: redisctl.ReasonReplicaLinkDown, Addr: "10.0.0.1:6379", Message: "master_link_status:down"}}
	}
	rep, err := runExecutor(t, tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Clusters[0]
	if !cr.PlacementCompliant || cr.Compliant || cr.Health.State != observe.HealthResyncing || len(cr.Moves) != 0 {
		t.Errorf("placement %v, compliant %v, health %+v, moves %d; want placement ok, resyncing, not compliant, no move", cr.PlacementCompliant, cr.Compliant, cr.Health, len(cr.Moves))
	}
	if want := "replica_link_down 10.0.0.1:6379: master_link_status:down"; !cmp.Equal(cr.Health.Reasons, []string{want}) {
		t.Errorf("reasons %q, want %q", cr.Health.Reasons, want)
	}
	if rep.Compliant() || rep.OnlyWindowStopped() {
		t.Error("the run reports compliance, or a window stop")
	}
}

// TestWindows checks the maintenance windows: outside them the run only observes; a window
// without time left for the move skips it; --ignore-windows acts; a window closing during the
// failover lets the move finish and stops the next one.
func TestWindows(t *testing.T) {
	nightly := func(d time.Duration) window.Config {
		return window.Config{Windows: []window.Window{{Schedule: "0 2 * * *", Duration: d}}}
	}
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	t.Run("outside every window → observe, plan and report only; says when the next window opens", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		tb.clock.SetTime(at("2026-03-10T05:00:00Z"))
		rep, err := runExecutor(t, tb, func(c *Config) { c.Window = nightly(2 * time.Hour) })
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		want := "maintenance window: closed; next window opens at 2026-03-11T02:00:00Z (in 21h0m0s)"
		if cr.Stopped != want || cr.StoppedBy != report.StepWindow || len(cr.Moves) != 0 || cr.Plan == nil || cr.Plan.Evictions != 1 || cr.Plan.Failovers != 2 {
			t.Errorf("stopped %q by %q, moves %d, plan %v; want %q, a plan, no move", cr.Stopped, cr.StoppedBy, len(cr.Moves), cr.Plan, want)
		}
		if rep.Window.Open || rep.Window.NextOpen == nil || !rep.Window.NextOpen.Equal(at("2026-03-11T02:00:00Z")) || !cmp.Equal(rep.Window.Windows, []string{"0 2 * * * for 2h0m0s"}) {
			t.Errorf("window %+v", rep.Window)
		}
		if cr.Health.State != observe.HealthHealthy || !rep.OnlyWindowStopped() || len(tb.evicted()) != 0 || len(tb.redis.called("failover")) != 0 {
			t.Errorf("health %+v, only window-stopped %v, evicted %v", cr.Health, rep.OnlyWindowStopped(), tb.evicted())
		}
	})
	t.Run("10 s left, the move's bound is longer → skip at the window step", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		tb.clock.SetTime(at("2026-03-10T02:59:50Z"))
		rep, err := runExecutor(t, tb, func(c *Config) { c.Window = nightly(time.Hour) })
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		want := "maintenance window: closes at 2026-03-10T03:00:00Z, in 10s; the move needs up to 33.2s (bound estimate)"
		if cr.Stopped != want || cr.StoppedBy != report.StepWindow || len(cr.Moves) != 1 || len(cr.Moves[0].Steps) != 1 || len(tb.evicted()) != 0 {
			t.Errorf("stopped %q by %q, moves %+v; want %q at the first step", cr.Stopped, cr.StoppedBy, cr.Moves, want)
		}
	})
	t.Run("--ignore-windows outside every window → the move is made, reported as ignored", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		tb.clock.SetTime(at("2026-03-10T05:00:00Z"))
		rep, err := runExecutor(t, tb, func(c *Config) { c.Window, c.IgnoreWindows = nightly(time.Hour), true })
		if err != nil {
			t.Fatal(err)
		}
		if cr := rep.Clusters[0]; !cr.Compliant || !rep.Window.Ignored || cr.Moves[0].Steps[0].Reason != "maintenance windows ignored (--ignore-windows)" {
			t.Errorf("compliant %v, window %+v, first step %+v", cr.Compliant, rep.Window, cr.Moves[0].Steps[0])
		}
	})
	t.Run("the window closes during the failover → the move finishes; the next one does not start", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		// Landing on n2 leaves zone-a with 5 pods: a second move is needed.
		tb.landOn["redis-s3-0"] = "n2"
		tb.redis.failover = func(string) error { tb.clock.SetTime(at("2026-03-10T03:00:01Z")); return nil }
		rep, err := runExecutor(t, tb, func(c *Config) { c.Window = nightly(time.Hour) })
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		if len(cr.Moves) != 2 {
			t.Fatalf("moves = %d, want 2", len(cr.Moves))
		}
		if diff := cmp.Diff(stepsUpTo(report.StepReobserve, report.OutcomeContinue), stepNames(cr.Moves[0])); diff != "" {
			t.Errorf("first move's steps (-want +got):\n%s", diff)
		}
		if got := stepNames(cr.Moves[1]); !cmp.Equal(got, []string{"window skip"}) {
			t.Errorf("second move's steps %v, want the window step skipping", got)
		}
		want := "maintenance window: closed; next window opens at 2026-03-11T02:00:00Z"
		if !strings.HasPrefix(cr.Stopped, want) || cr.StoppedBy != report.StepWindow || len(tb.evicted()) != 1 {
			t.Errorf("stopped %q by %q, evicted %v; want %q, one eviction", cr.Stopped, cr.StoppedBy, tb.evicted(), want)
		}
	})
	t.Run("the window closes between the gate and the failover → skip at failover, nothing disrupted", func(t *testing.T) {
		tb := newTestbed(t, scenario.PostScaleDown())
		tb.redis.reasons = func(int) []redisctl.Reason { tb.clock.SetTime(at("2026-03-10T02:59:59Z")); return nil }
		rep, err := runExecutor(t, tb, func(c *Config) { c.Window = nightly(time.Hour) })
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		if diff := cmp.Diff(stepsUpTo(report.StepFailover, report.OutcomeSkip), stepNames(cr.Moves[0])); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(cr.Stopped, "maintenance window: closes at 2026-03-10T03:00:00Z, in 1s; the rest of the move") || cr.StoppedBy != report.StepWindow {
			t.Errorf("stopped %q by %q", cr.Stopped, cr.StoppedBy)
		}
		if len(tb.redis.called("failover")) != 0 || len(tb.evicted()) != 0 {
			t.Error("disrupted after the window closed")
		}
	})
}

// TestMoveBound: a move's bound is the sum of its steps' bounds (the gate and the re-observation
// wait HealthTimeout each, the failover RequestTimeout+FailoverTimeout, six requests, the drain,
// re-creation and rejoin their timeouts), and it is what the window step asks for.
func TestMoveBound(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	tb.clock.SetTime(time.Date(2026, 3, 10, 2, 59, 0, 0, time.UTC)) // 1 min left in the window
	timeouts := func(c *Config) {
		c.HealthTimeout, c.RequestTimeout, c.FailoverTimeout = 10*time.Second, time.Second, 2*time.Second
		c.DrainTimeout, c.RecreateTimeout, c.RejoinTimeout = 3*time.Second, 4*time.Second, 5*time.Second
		c.Window = window.Config{Windows: []window.Window{{Schedule: "0 2 * * *", Duration: time.Hour}}}
	}
	cfg := tb.config()
	timeouts(&cfg)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 10 + 1 + 1 + (1+2) + 3 + 1 + 1 + 4 + 5 + (1+10)
	if got, want := e.MoveBound(), 40*time.Second; got != want {
		t.Errorf("MoveBound = %s, want %s", got, want)
	}
	rep, err := runExecutor(t, tb, timeouts)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Clusters[0].Moves[0].Steps[0].Reason; !strings.Contains(got, "the move needs up to 40s (bound estimate)") {
		t.Errorf("window step: %q, want the move's bound, 40s", got)
	}
}

// twoClusters returns post-scale-down twice, as Redis clusters a and b on the same nodes.
func twoClusters() []scenario.Scenario {
	a, b := scenario.PostScaleDown(), scenario.PostScaleDown()
	a.Cluster, b.Cluster = "a", "b"
	return []scenario.Scenario{a.Placed(placementOf(a)), b.Placed(placementOf(b))}
}

// placementOf is post-scale-down's placement for sc's pod names.
func placementOf(scenario.Scenario) [][]string {
	return [][]string{{"n1", "n3"}, {"n1", "n3"}, {"n1", "n4"}, {"n1", "n4"}, {"n2", "n5"}}
}

// TestParallelClusters: with --max-parallel-clusters 2 two clusters are in flight at once (both
// failovers meet at a barrier), each with its own prefixed progress; with 1, never.
func TestParallelClusters(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel int
		want     int // most failovers in flight at once
	}{
		{name: "max 2 parallel → both clusters in flight at once", parallel: 2, want: 2},
		{name: "max 1 → one cluster at a time", parallel: 1, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, twoClusters()...)
			var mu sync.Mutex
			inFlight, most := 0, 0
			both := make(chan struct{})
			var bothOnce sync.Once
			tb.redis.failover = func(string) error {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				if inFlight == 2 {
					bothOnce.Do(func() { close(both) })
				}
				mu.Unlock()
				// Wait for the other cluster's failover: with 2 in parallel it comes (a generous
				// bound only keeps a broken executor from hanging the test); with 1 it must not
				// come, given a moment to.
				alone := 200 * time.Millisecond
				if tc.want == 2 {
					alone = 30 * time.Second
				}
				select {
				case <-both:
				case <-time.After(alone):
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				return nil
			}
			rep, err := runExecutor(t, tb, func(c *Config) { c.MaxParallelClusters = tc.parallel })
			if err != nil {
				t.Fatal(err)
			}
			if most != tc.want {
				t.Errorf("most failovers in flight = %d, want %d", most, tc.want)
			}
			if !rep.Compliant() || rep.Limits.Evicted != 2 {
				t.Errorf("compliant %v, evicted %d; want both clusters fixed", rep.Compliant(), rep.Limits.Evicted)
			}
			out := tb.out.String()
			if tc.parallel > 1 {
				for _, k := range []string{"redis/a", "redis/b"} {
					if !strings.Contains(out, "["+k+"] == Redis cluster "+k) || !strings.Contains(out, "["+k+"]   ✓ evict ") {
						t.Errorf("progress lacks %s's prefixed lines", k)
					}
				}
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					if line != "" && !strings.HasPrefix(line, "[redis/") {
						t.Errorf("line without a cluster prefix: %q", line)
					}
				}
			}
		})
	}
}

// TestEvictionLimitsCountAcrossClusters: a total of 1 eviction for two clusters → one is moved,
// the other stops before its failover with the descheduler's limit error.
func TestEvictionLimitsCountAcrossClusters(t *testing.T) {
	tb := newTestbed(t, twoClusters()...)
	rep, err := runExecutor(t, tb, func(c *Config) { c.MaxPodsToEvictTotal = ptr.To[uint](1) })
	if err != nil {
		t.Fatal(err)
	}
	a, b := rep.Clusters[0], rep.Clusters[1]
	if !a.Compliant || len(tb.evicted()) != 1 || rep.Limits.Evicted != 1 {
		t.Errorf("cluster a compliant %v, evicted %v", a.Compliant, tb.evicted())
	}
	want := "eviction limit: maximum number of evicted pods per a descheduling cycle reached (maxPodsToEvictTotal 1)"
	// Cluster a's three failovers (before its eviction, and two steps); none in cluster b.
	if b.Stopped != want || b.StoppedBy != report.StoppedEvictionLimit || len(tb.redis.called("failover")) != 3 || len(b.Moves) != 1 || b.Moves[0].Failover != nil {
		t.Errorf("cluster b stopped %q by %q, failovers %v; want %q before a failover", b.Stopped, b.StoppedBy, tb.redis.called("failover"), want)
	}
}

// TestRunAPIServerDown: the API server down from the start → an error naming it, and a report.
func TestRunAPIServerDown(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	tb.apiDown = true
	rep, err := runExecutor(t, tb, nil)
	if err == nil || !strings.Contains(err.Error(), "list nodes: "+errConnRefused.Error()) {
		t.Fatalf("Run error %v, want list nodes: connection refused", err)
	}
	if len(rep.Clusters) != 0 {
		t.Errorf("clusters %+v", rep.Clusters)
	}
}

// TestRunRedisRefusesEveryone: a wrong password (or port) → no move, an error naming Redis's
// answer, and the health reported unhealthy with it.
func TestRunRedisRefusesEveryone(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	tb.redis.down = errors.New("WRONGPASS invalid username-password pair or user is disabled.")
	rep, err := runExecutor(t, tb, nil)
	want := "observe: roles: read Redis topology: redisctl: topology: no node answered: "
	if err == nil || !strings.Contains(err.Error(), "cluster redis/redis: "+want) {
		t.Fatalf("Run error %v, want %q", err, want)
	}
	cr := rep.Clusters[0]
	if !strings.HasPrefix(cr.Stopped, want) || cr.StoppedBy != report.StoppedObserve || len(cr.Moves) != 0 {
		t.Errorf("stopped %q by %q, moves %d", cr.Stopped, cr.StoppedBy, len(cr.Moves))
	}
	if cr.Health.State != observe.HealthUnhealthy || !strings.Contains(cr.Health.Reasons[0], "node_unreachable 10.0.0.0:6379: WRONGPASS") {
		t.Errorf("health %+v", cr.Health)
	}
}

// TestPollKeepsTheLastWholeRound: a round cut short by the deadline (its reads fail with the
// context's error) does not replace the real reason seen before it.
func TestPollKeepsTheLastWholeRound(t *testing.T) {
	rounds := 0
	var printed []string
	status, err := poll(context.Background(), time.Millisecond, 50*time.Millisecond, nil, func(s string) { printed = append(printed, s) }, func(ctx context.Context) (bool, string) {
		rounds++
		if rounds == 1 {
			return false, "node_unreachable 10.0.0.1:6379: connection refused"
		}
		<-ctx.Done() // this round's reads run into the deadline
		return false, "list pods: client rate limiter Wait returned an error: " + ctx.Err().Error()
	})
	if err == nil {
		t.Fatal("poll succeeded")
	}
	want := "node_unreachable 10.0.0.1:6379: connection refused"
	if status != want || !cmp.Equal(printed, []string{want}) {
		t.Errorf("status %q, printed %q; want %q", status, printed, want)
	}
}

// TestPollDropsARoundRefusedBeforeTheDeadline: client-go's rate limiter refuses a request that
// would wait past the context's deadline while the context is still live; such a round, ending
// less than one interval before the deadline, is dropped like one the deadline cut short.
func TestPollDropsARoundRefusedBeforeTheDeadline(t *testing.T) {
	const interval = 20 * time.Millisecond
	want := "re-created, not scheduled yet"
	status, err := poll(context.Background(), interval, 100*time.Millisecond, nil, nil, func(ctx context.Context) (bool, string) {
		if d, _ := ctx.Deadline(); time.Until(d) < interval {
			if ctx.Err() != nil {
				t.Error("the refused round ran after the deadline; the test needs it before")
			}
			return false, "get: client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline"
		}
		return false, want
	})
	if err == nil || status != want {
		t.Errorf("status %q (err %v), want %q", status, err, want)
	}
}

// TestEstimates checks the expected duration of steps: their bounds, or the p95 of what was
// measured.
func TestEstimates(t *testing.T) {
	steps := []step{{name: "a", bound: 10 * time.Second}, {name: "b", bound: time.Minute}}
	bound := newEstimates(v1alpha1.StepEstimateBound)
	p95 := newEstimates(v1alpha1.StepEstimateP95)
	for i := 1; i <= 20; i++ {
		bound.record("a", time.Duration(i)*time.Millisecond)
		p95.record("a", time.Duration(i)*time.Millisecond)
	}
	if got, want := bound.expected(steps), 70*time.Second; got != want {
		t.Errorf("bound: %s, want %s", got, want)
	}
	// a: the 19th of 20 measures (nearest rank); b: not measured, its bound.
	if got, want := p95.expected(steps), time.Minute+19*time.Millisecond; got != want {
		t.Errorf("p95: %s, want %s", got, want)
	}
}

// TestBudget checks the eviction reservations against the limits, in the descheduler's order
// (total, node, namespace), and that a released reservation counts no more.
func TestBudget(t *testing.T) {
	pod := func(name, ns, node string) *corev1.Pod {
		return fixture.Pod(name, fixture.InNamespace(ns), fixture.On(node))
	}
	b := newBudget(Config{MaxPodsToEvictPerNode: ptr.To[uint](1), MaxPodsToEvictPerNamespace: ptr.To[uint](2), MaxPodsToEvictTotal: ptr.To[uint](3)})
	release, err := b.reserve(pod("p1", "a", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.reserve(pod("p2", "a", "n1")); err == nil || !strings.Contains(err.Error(), "per node reached (node n1") {
		t.Errorf("second on n1: %v, want the node limit", err)
	}
	release()
	release() // twice is harmless
	for _, p := range []*corev1.Pod{pod("p2", "a", "n1"), pod("p3", "a", "n2")} {
		if _, err := b.reserve(p); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	if _, err := b.reserve(pod("p4", "a", "n3")); err == nil || !strings.Contains(err.Error(), "per namespace reached (namespace a") {
		t.Errorf("third in a: %v, want the namespace limit", err)
	}
	if _, err := b.reserve(pod("p5", "b", "n4")); err != nil {
		t.Errorf("p5: %v", err)
	}
	if _, err := b.reserve(pod("p6", "c", "n5")); err == nil || !strings.Contains(err.Error(), "per a descheduling cycle reached (maxPodsToEvictTotal 3)") {
		t.Errorf("fourth: %v, want the total limit", err)
	}
}

// TestPrefixWriter: whole lines, each prefixed, a partial line held until completed or flushed.
func TestPrefixWriter(t *testing.T) {
	var out strings.Builder
	w := newPrefixWriter(&out, "[x] ")
	fmt.Fprint(w, "one\ntw")
	fmt.Fprint(w, "o\nthree")
	if got, want := out.String(), "[x] one\n[x] two\n"; got != want {
		t.Errorf("before Flush: %q, want %q", got, want)
	}
	w.Flush()
	if got, want := out.String(), "[x] one\n[x] two\n[x] three\n"; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
}

// TestSameGate: two rounds of the health wait that differ only in their messages (a new local
// port in an i/o error) say the same thing; another reason or another node does not.
func TestSameGate(t *testing.T) {
	a := gateStatus{text: "unhealthy: node_unreachable 10.0.0.1:6379: read tcp 127.0.0.1:42324->10.0.0.1:6379: i/o timeout; no_connected_replica 10.0.0.0:6379: master of 0-5460 has no connected replica (1 known)"}
	for _, tc := range []struct {
		name string
		b    gateStatus
		want bool
	}{
		{name: "another local port → same", b: gateStatus{text: strings.ReplaceAll(a.text, "42324", "42334")}, want: true},
		{name: "another node → different", b: gateStatus{text: strings.ReplaceAll(a.text, "10.0.0.1:6379", "10.0.1.1:6379")}},
		{name: "a reason less → different", b: gateStatus{text: "unhealthy: node_unreachable 10.0.0.1:6379: i/o timeout"}},
		{name: "an API error → different", b: gateStatus{text: a.text, apiErr: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameGate(a, tc.b); got != tc.want {
				t.Errorf("sameGate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFailoverSteps covers a plan's failover steps (MasterQuorum), which move no pod: the
// role-only case is fixed by one failover on the replica the plan names, with the same gate as an
// eviction, and no eviction; a master that handed its slots over since the plan is not failed
// over again.
func TestFailoverSteps(t *testing.T) {
	t.Run("role-only: pods comply, n1 holds 3 of 5 masters → one failover step on the named replica, no eviction, compliant", func(t *testing.T) {
		tb := newTestbed(t, scenario.RoleOnly())
		rep, err := runExecutor(t, tb, nil)
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		if len(cr.Moves) != 1 {
			t.Fatalf("moves = %d, want 1: %+v", len(cr.Moves), cr.Moves)
		}
		m := cr.Moves[0]
		if diff := cmp.Diff(failoverStepNames, stepNames(m)); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		want := report.Failover{OldMaster: "redis-s2-0", NewMaster: "redis-s2-1", Seconds: 0.05}
		if m.Kind != plan.KindFailover || m.Failover == nil || *m.Failover != want || m.From != "n1" || m.Evicted {
			t.Errorf("move %+v, failover %+v; want %+v", m, m.Failover, want)
		}
		if fo := tb.redis.called("failover"); !cmp.Equal(fo, []string{"failover 10.0.2.1:6379"}) || len(tb.evicted()) != 0 || rep.Limits.Evicted != 0 {
			t.Errorf("failovers %v, evicted %v; want one failover on redis-s2-1, no eviction", fo, tb.evicted())
		}
		if !cr.Compliant || len(policies.Hard(cr.After)) != 0 {
			t.Errorf("compliant %v, after %+v", cr.Compliant, cr.After)
		}
		if !strings.Contains(tb.out.String(), "move 1 (plan: 0 evictions, 1 failover, minimal): fail redis/redis-s2-0 (n1) over to redis/redis-s2-1 (n4): no pod moves") {
			t.Error("the progress does not say which failover the plan makes")
		}
	})
	t.Run("the master handed its slots over since the plan → skip at failover; no other failover", func(t *testing.T) {
		tb := newTestbed(t, scenario.RoleOnly())
		var once sync.Once
		tb.redis.reasons = func(int) []redisctl.Reason {
			once.Do(func() { // Redis fails redis-s2-0 over by itself, after the plan
				tb.redis.mu.Lock()
				defer tb.redis.mu.Unlock()
				rep, old := tb.redis.nodes[addrOf("10.0.2.1")], tb.redis.nodes[addrOf("10.0.2.0")]
				rep.masterAddr, old.masterAddr = "", rep.addr
			})
			return nil
		}
		rep, err := runExecutor(t, tb, nil)
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		if len(cr.Moves) != 1 || cr.StoppedBy != report.StepFailover || !strings.HasPrefix(cr.Stopped, "failover: redis-s2-0 is no longer a master") {
			t.Fatalf("moves %+v, stopped %q by %q", cr.Moves, cr.Stopped, cr.StoppedBy)
		}
		if len(tb.redis.called("failover")) != 0 {
			t.Errorf("failovers %v, want none", tb.redis.called("failover"))
		}
	})
}

// pendingStepBed lays out the Pending-step case (scenario.PendingStep: N = 4 in two zones of three
// nodes, each shard's pods in one zone): the plan with Pending steps evicts redis-s1-1, which waits
// Pending (no node fits it), then redis-s0-1, after which the scheduler places redis-s1-1 on n2.
// The fake scheduler does that: the re-created redis-s1-1 stays Pending (Unschedulable) until
// redis-s0-1 is evicted; while it is, Redis reports its old node failing and its master without a
// replica. extra, when set, also changes the pods when redis-s1-1 is re-created.
func pendingStepBed(t *testing.T, extra func(tb *testbed)) *testbed {
	t.Helper()
	tb := newTestbed(t, scenario.PendingStep())
	tb.landOn["redis-s0-1"] = "n5"
	var waiting bool
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	tb.recreate = func(p *corev1.Pod) {
		switch p.Name {
		case "redis-s1-1":
			p.Spec.NodeName, p.Status.PodIP, p.Status.Phase, p.Status.Conditions = "", "", corev1.PodPending, nil
			fixture.Unschedulable()(p)
			p.Status.Conditions[0].Message = "0/6 nodes are available: 3 node(s) didn't match pod anti-affinity rules, 3 node(s) didn't match pod topology spread constraints."
			waiting = true
			if extra != nil {
				extra(tb)
			}
		case "redis-s0-1":
			// The room redis-s0-1 leaves on n2 lets the scheduler place redis-s1-1.
			obj, err := tb.client.Tracker().Get(gvr, "redis", "redis-s1-1")
			if err != nil {
				t.Error(err)
				return
			}
			q := obj.(*corev1.Pod).DeepCopy()
			fixture.On("n2")(q)
			fixture.Ready()(q)
			q.Status.PodIP = "10.0.1.1"
			if err := tb.client.Tracker().Update(gvr, q, "redis"); err != nil {
				t.Error(err)
			}
			waiting = false
		}
	}
	tb.redis.reasons = func(int) []redisctl.Reason {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if !waiting {
			return nil
		}
		return []redisctl.Reason{
			{Code: redisctl.ReasonNodeFailing, Addr: "10.0.1.1:6379", NodeID: tb.redis.nodes["10.0.1.1:6379"].id, Message: "flagged by 10.0.1.0:6379"},
			{Code: redisctl.ReasonNoConnectedReplica, Addr: "10.0.1.0:6379", Message: "master of 0 has no connected replica (1 known)"},
		}
	}
	return tb
}

// TestPendingSteps covers run with Pending steps (--allow-pending-steps): the evicted pod the plan
// lets wait Pending is not waited for at re-creation; the health gate accepts exactly that pod
// Pending (and its node gone from Redis) until the next move frees its room; the exposure is
// reported; without Pending steps the same cluster has no plan.
func TestPendingSteps(t *testing.T) {
	t.Run("N=4, each shard's pods in one zone → evict redis-s1-1 (waits Pending), then redis-s0-1; both placed, compliant", func(t *testing.T) {
		tb := pendingStepBed(t, nil)
		rep, err := runExecutor(t, tb, func(c *Config) { c.Plan.AllowPendingSteps = true })
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		if len(cr.Moves) != 2 {
			t.Fatalf("moves = %d, want 2: %+v", len(cr.Moves), cr.Moves)
		}
		first, second := cr.Moves[0], cr.Moves[1]
		if diff := cmp.Diff(stepsUpTo(report.StepReobserve, report.OutcomeContinue), stepNames(first)); diff != "" {
			t.Errorf("first move's steps (-want +got):\n%s", diff)
		}
		if first.Pod != "redis/redis-s1-1" || !first.Evicted || !first.WaitsPending || first.To != "" ||
			first.Exposure != "exposure: redis/redis-s1-1 (replica) waits Pending after this move; shard redis-s1 runs without it until the plan's move 2 places it on n2" {
			t.Errorf("first move: %+v", first)
		}
		for _, s := range first.Steps {
			if s.Name == report.StepRecreate && !strings.Contains(s.Reason, "re-created and Pending, as the plan says") ||
				s.Name == report.StepPlaceable && !strings.Contains(s.Reason, "fits no node, as the plan says") {
				t.Errorf("step %+v", s)
			}
		}
		if second.Pod != "redis/redis-s0-1" || !second.Evicted || second.WaitsPending || second.To != "n5" || second.Outcome != report.OutcomeContinue {
			t.Errorf("second move: %+v", second)
		}
		if !cr.Compliant || !cmp.Equal(tb.evicted(), []string{"redis-s1-1", "redis-s0-1"}) {
			t.Errorf("compliant %v (after %+v, health %+v), evicted %v", cr.Compliant, cr.After, cr.Health, tb.evicted())
		}
		if !strings.Contains(tb.out.String(), "! exposure: redis/redis-s1-1 (replica) waits Pending after this move") {
			t.Error("the progress does not print the exposure")
		}
	})
	t.Run("another pod Pending after the planned one → the health gate refuses, naming it", func(t *testing.T) {
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
		tb := pendingStepBed(t, func(tb *testbed) {
			obj, err := tb.client.Tracker().Get(gvr, "redis", "redis-s0-0")
			if err != nil {
				t.Error(err)
				return
			}
			q := obj.(*corev1.Pod).DeepCopy()
			q.Spec.NodeName, q.Status.PodIP, q.Status.Phase, q.Status.Conditions = "", "", corev1.PodPending, nil
			fixture.Unschedulable()(q)
			if err := tb.client.Tracker().Update(gvr, q, "redis"); err != nil {
				t.Error(err)
			}
		})
		rep, err := runExecutor(t, tb, func(c *Config) { c.Plan.AllowPendingSteps = true })
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		if len(cr.Moves) != 1 || cr.StoppedBy != report.StepReobserve || !strings.Contains(cr.Stopped, "pods Pending that no planned step leaves Pending: redis-s0-0") {
			t.Errorf("moves %d, stopped %q by %q; want the re-observation refusing redis-s0-0", len(cr.Moves), cr.Stopped, cr.StoppedBy)
		}
		if cr.Compliant {
			t.Error("compliant with a shard without its replica")
		}
	})
	t.Run("without Pending steps → no plan, nothing evicted", func(t *testing.T) {
		tb := pendingStepBed(t, nil)
		rep, err := runExecutor(t, tb, nil)
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		if cr.StoppedBy != report.StoppedNoPlan || !strings.Contains(cr.Stopped, "--allow-pending-steps") || len(tb.evicted()) != 0 {
			t.Errorf("stopped %q by %q, evicted %v", cr.Stopped, cr.StoppedBy, tb.evicted())
		}
	})
}

// TestReintroduce: two nodes that swapped pod IPs list each other without an address (noaddr);
// each is sent CLUSTER MEET with the other's address as the other reports it, once.
func TestReintroduce(t *testing.T) {
	tb := newTestbed(t, scenario.PendingStep())
	e, err := New(tb.config())
	if err != nil {
		t.Fatal(err)
	}
	cr := &clusterRun{run: e.newRun(context.Background()), key: "redis/redis", out: &tb.out}
	me := func(id, ip string) redisctl.Node {
		return redisctl.Node{ID: id, IP: ip, Port: 6379, Flags: []string{redisctl.FlagMyself, redisctl.FlagReplica}}
	}
	topo := &redisctl.Topology{
		Views: []redisctl.View{
			{Addr: "10.0.0.1:6379", Nodes: []redisctl.Node{me("id-a", "10.0.0.1")}},
			{Addr: "10.0.1.1:6379", Nodes: []redisctl.Node{me("id-b", "10.0.1.1")}},
			{Addr: "10.0.0.0:6379", Nodes: []redisctl.Node{me("id-m", "10.0.0.0")}},
		},
		Disagreements: []redisctl.Disagreement{
			{NodeID: "id-a", Field: "addr", Values: map[string]string{"10.0.0.1:6379": "10.0.0.1:6379", "10.0.1.1:6379": "", "10.0.0.0:6379": "10.0.0.1:6379"}},
			{NodeID: "id-b", Field: "addr", Values: map[string]string{"10.0.0.1:6379": "", "10.0.1.1:6379": "10.0.1.1:6379", "10.0.0.0:6379": "10.0.1.1:6379"}},
			{NodeID: "id-m", Field: "role", Values: map[string]string{"10.0.0.1:6379": "master", "10.0.1.1:6379": "replica"}},
		},
	}
	met := map[[2]string]bool{}
	cr.reintroduce(context.Background(), topo, met)
	cr.reintroduce(context.Background(), topo, met)
	got := tb.redis.called("CLUSTER")
	sort.Strings(got)
	if want := []string{"CLUSTER 10.0.0.1:6379", "CLUSTER 10.0.1.1:6379"}; !cmp.Equal(got, want) {
		t.Errorf("calls %v, want one MEET from each node that lost the other's address: %v", got, want)
	}
	if out := tb.out.String(); !strings.Contains(out, "10.0.1.1:6379 lists node id-a without an address: CLUSTER MEET 10.0.0.1:6379") {
		t.Errorf("progress %q", out)
	}
}

// TestRunStopsWhenTheSchedulerUndoesProgress plays a scheduler that puts every re-created pod
// back on the node it left (what soft anti-affinity allows): each move is re-planned from what
// the scheduler did, the evictions whose re-plan needs as many evictions as before are marked off
// track, and the second one stops the cluster (offTrack) instead of evicting forever.
func TestRunStopsWhenTheSchedulerUndoesProgress(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	snap, err := scenario.PostScaleDown().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	tb.set(func() {
		for _, p := range snap.Pods {
			tb.landOn[p.Name] = p.Spec.NodeName
		}
	})
	rep, err := runExecutor(t, tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Clusters[0]
	if cr.StoppedBy != report.StoppedOffTrack || !strings.HasPrefix(cr.Stopped, "off track: the scheduler undid the progress of 2 evictions") {
		t.Errorf("stopped by %q: %q; want offTrack", cr.StoppedBy, cr.Stopped)
	}
	var evictions, offTrack int
	for _, m := range cr.Moves {
		if m.Kind == plan.KindEvict && m.Evicted {
			evictions++
			if m.To != m.From {
				t.Errorf("%s re-created on %s, the test bed puts it back on %s", m.Pod, m.To, m.From)
			}
		}
		if m.OffTrack {
			offTrack++
		}
	}
	if evictions != 2 || offTrack != 2 || len(tb.evicted()) != 2 {
		t.Errorf("%d evictions (%v), %d off track; want 2 and 2", evictions, tb.evicted(), offTrack)
	}
	if cr.Compliant {
		t.Error("compliant, want not (nothing moved)")
	}
	if !strings.Contains(tb.out.String(), "off the plan's track: the scheduler put redis/") {
		t.Errorf("progress does not say the move went off track")
	}
}

// TestRunShardsFromRedis runs post-scale-down laid out as Bitnami's chart lays a cluster out: one
// StatefulSet for every pod, a template without the shard's anti-affinity. The shards come from
// Redis (auto: one StatefulSet is not one shard), so the master evicted is failed over to its
// replica in Redis, and the cluster ends compliant and healthy.
func TestRunShardsFromRedis(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	ctx := context.Background()
	apps := tb.client.AppsV1().StatefulSets(fixture.Namespace)
	list, err := apps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := *list.Items[0].Spec.Template.DeepCopy()
	delete(tmpl.Labels, scenario.ShardLabel)
	tmpl.Spec.Affinity.PodAntiAffinity = nil
	for _, s := range list.Items {
		if err := apps.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sts := fixture.StatefulSet("redis", 10, map[string]string{policies.DefaultClusterLabel: "redis"}, tmpl)
	if _, err := apps.Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := tb.client.CoreV1().Pods(fixture.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = sts.Name, sts.UID
		if _, err := tb.client.CoreV1().Pods(fixture.Namespace).Update(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName == "n1" {
			tb.set(func() { tb.landOn[p.Name] = "n6" })
		}
	}
	rep, err := runExecutor(t, tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Clusters[0]
	if cr.ShardSource != "redis" || len(cr.Warnings) != 0 {
		t.Errorf("shard source %q, warnings %q; want redis, none", cr.ShardSource, cr.Warnings)
	}
	if !cr.Compliant || cr.StoppedBy != "" {
		t.Fatalf("compliant %v, stopped by %q: %s", cr.Compliant, cr.StoppedBy, cr.Stopped)
	}
	m := cr.Moves[0]
	// The shards' pods are named redis-s<k>-<i>: Redis's replica of redis-sK-0 is redis-sK-1.
	if m.Kind != plan.KindEvict || m.Failover == nil || m.Failover.NewMaster != strings.TrimSuffix(podName(m.Pod), "-0")+"-1" {
		t.Errorf("first move %+v (failover %+v): want a master of n1 evicted after failing over to its replica in Redis", m, m.Failover)
	}
}
