package execute

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
)

// result is what a step returns: continue (with an optional note), skip (a safety check said
// no; the reason), or abort (an error).
type result struct {
	outcome string // report.OutcomeContinue, OutcomeSkip or OutcomeAbort
	// reason is the note of a step that continued, or why it skipped.
	reason string
	// err is why the step aborted.
	err error
	// stoppedBy, when set, names what stopped the cluster instead of the step (report.StepWindow
	// for the window re-check the failover step makes).
	stoppedBy string
}

func proceed(format string, args ...any) result {
	return result{outcome: report.OutcomeContinue, reason: fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) result {
	return result{outcome: report.OutcomeSkip, reason: fmt.Sprintf(format, args...)}
}

func abort(err error) result { return result{outcome: report.OutcomeAbort, err: err} }

// text is the reason or the error's text.
func (r result) text() string {
	if r.err != nil {
		return r.err.Error()
	}
	return r.reason
}

// step is one step of a move (SPEC "Safe disruption").
type step struct {
	// name is a report.Step… name.
	name string
	// bound is the longest the step may take: the timeouts of its waits, or RequestTimeout.
	bound time.Duration
	// deadline gives the step a context that ends after bound (steps without a timeout of their
	// own); the waits keep their own timeouts instead, so that their error is theirs.
	deadline bool
	// wait marks a step that only waits: a graceful stop abandons it (Config.Stop). The other
	// steps are requests, which finish.
	wait bool
	run  func(ctx context.Context, m *move) result
}

// move is the state one move's steps share.
type move struct {
	// c is the cluster as last observed (the placeability check observes it afresh).
	c  *policies.Cluster
	mv plan.Move
	// plan is the plan mv is the first move of.
	plan plan.Plan
	// pod is the pod to move, as last observed; addr its Redis address.
	pod  *corev1.Pod
	addr string
	// health is the health gate's verdict (its Redis topology gives the pod's role).
	health observe.Health
	// masterID is the master the re-created pod must replicate (its shard's master after the
	// failover).
	masterID string
	// release gives back the eviction reserved against the run's limits, unless it was made.
	release func()
	// recreated is the pod the StatefulSet re-created; after the cluster observed at the end.
	recreated *corev1.Pod
	after     *policies.Cluster
	// steps are the move's steps; index the one running.
	steps []step
	index int
	rep   *report.Move
}

// steps returns the steps of a planned move, in order, with their bounds: an eviction's, or a
// failover step's (MasterQuorum), which are the eviction's steps that move no pod (failoverStep),
// with the same bounds and the same waits.
func (cr *clusterRun) steps(mv plan.Move) []step {
	c := cr.cfg
	all := []step{
		{name: report.StepWindow, run: cr.windowStep},
		{name: report.StepHealthGate, bound: c.HealthTimeout, wait: true, run: cr.healthGate},
		{name: report.StepPlaceable, bound: c.RequestTimeout, deadline: true, run: cr.placeable},
		{name: report.StepPDBDryRun, bound: c.RequestTimeout, deadline: true, run: cr.pdbDryRun},
		{name: report.StepFailover, bound: c.RequestTimeout + c.FailoverTimeout, run: cr.failover},
		{name: report.StepDrain, bound: c.DrainTimeout, wait: true, run: cr.drain},
		{name: report.StepRoleCheck, bound: c.RequestTimeout, deadline: true, run: cr.roleCheck},
		{name: report.StepEvict, bound: c.RequestTimeout, deadline: true, run: cr.evict},
		{name: report.StepRecreate, bound: c.RecreateTimeout, wait: true, run: cr.recreate},
		{name: report.StepRejoin, bound: c.RejoinTimeout, wait: true, run: cr.rejoin},
		{name: report.StepReobserve, bound: c.RequestTimeout + c.HealthTimeout, wait: true, run: cr.reobserve},
	}
	if mv.Kind != plan.KindFailover {
		return all
	}
	var fo []step
	for _, s := range all {
		if failoverStep[s.name] {
			fo = append(fo, s)
		}
	}
	return fo
}

// failoverStep names the steps of a plan's failover step: the same gate as an eviction's, and no
// pod moves: window → health gate → failover to the replica the plan names, verified → client
// drain → re-observe.
var failoverStep = map[string]bool{
	report.StepWindow: true, report.StepHealthGate: true, report.StepFailover: true,
	report.StepDrain: true, report.StepReobserve: true,
}

// move carries out the first move of plan p: its steps in order until one does not continue,
// holding the cluster's lock (one disruption in flight per Redis cluster, with Executor.HandOff
// too). It returns the move as it happened, the cluster observed at its end (nil unless every step
// continued), and the last step's result.
func (cr *clusterRun) move(ctx context.Context, c *policies.Cluster, p plan.Plan) (report.Move, *policies.Cluster, result) {
	defer cr.locks.lock(cr.key)()
	mv := p.Moves[0]
	clk := cr.cfg.Clock
	start := clk.Now()
	mem := c.Members[mv.Member]
	kind := mv.Kind
	if kind == "" {
		kind = plan.KindEvict
	}
	m := &move{
		c: c, mv: mv, plan: p, pod: mem.Pod, addr: cr.cfg.Redis.AddrOf(mem.Pod.Status.PodIP),
		rep:   &report.Move{Kind: kind, Pod: mv.Pod, From: mv.Node, Expected: mv.Expected, WaitsPending: mv.WaitsPending, Steps: []report.Step{}},
		steps: cr.steps(mv),
	}
	if mv.WaitsPending {
		m.rep.Exposure = exposureText(m.plan, mv)
	}
	var res result
	for i, s := range m.steps {
		m.index = i
		if cr.stopping() {
			// A safe point: between two steps. After a failover nothing is evicted (the next
			// run checks the roles again); after an eviction the StatefulSet re-creates the pod.
			res = gracefulStop("stopped before %s: %s", s.name, m.state())
			m.rep.Steps = append(m.rep.Steps, report.Step{Name: s.name, Outcome: res.outcome, Reason: res.reason})
			cr.cfg.Observer.Step(cr.key, m.rep.Steps[len(m.rep.Steps)-1])
			cr.logStep(m, s.name, res, 0)
			break
		}
		t0 := clk.Now()
		sctx, cancel := ctx, context.CancelFunc(func() {})
		switch {
		case s.deadline:
			sctx, cancel = context.WithTimeout(ctx, s.bound)
		case s.wait:
			sctx, cancel = withStop(ctx, cr.cfg.Stop)
		}
		res = s.run(sctx, m)
		cancel()
		if s.wait && res.outcome != report.OutcomeContinue && cr.stopping() && ctx.Err() == nil {
			res = gracefulStop("%s abandoned (a wait: abandoning it disrupts nothing): %s", s.name, m.state())
		}
		d := clk.Since(t0)
		m.rep.Steps = append(m.rep.Steps, report.Step{Name: s.name, Outcome: res.outcome, Reason: res.text(), Seconds: report.Seconds(d)})
		cr.cfg.Observer.Step(cr.key, m.rep.Steps[len(m.rep.Steps)-1])
		cr.logStep(m, s.name, res, d)
		if res.outcome == report.OutcomeContinue {
			cr.printf("  ✓ %s (%s): %s\n", s.name, d.Round(time.Millisecond), res.reason)
		} else {
			if res.stoppedBy == "" {
				res.stoppedBy = s.name
			}
			break
		}
		cr.estimates.record(s.name, d)
	}
	if m.release != nil && !m.rep.Evicted {
		m.release()
	}
	m.rep.Outcome = res.outcome
	switch res.outcome {
	case report.OutcomeSkip:
		m.rep.Skipped = res.reason
	case report.OutcomeAbort:
		m.rep.Error = res.err.Error()
	}
	m.rep.Seconds = report.Seconds(clk.Since(start))
	last := m.rep.Steps[len(m.rep.Steps)-1].Name
	switch res.outcome {
	case report.OutcomeSkip:
		cr.events.pod(m.pod, corev1.EventTypeWarning, ReasonMoveSkipped, ActionRebalance, "move of %s skipped at step %s: %s", m.mv.Pod, last, res.reason)
	case report.OutcomeAbort:
		cr.events.pod(m.pod, corev1.EventTypeWarning, ReasonMoveAborted, ActionRebalance, "move of %s aborted at step %s: %v", m.mv.Pod, last, res.err)
	}
	cr.cfg.Observer.Move(cr.key, *m.rep)
	return *m.rep, m.after, res
}

// gracefulStop is the result of a move stopped by a graceful stop (Config.Stop): a skip.
func gracefulStop(format string, args ...any) result {
	r := skip("graceful stop: "+format, args...)
	r.stoppedBy = report.StoppedGracefulStop
	return r
}

// state says what the move has disrupted so far, for a graceful stop's reason.
func (m *move) state() string {
	switch {
	case m.rep.Evicted:
		return "the pod was evicted; its StatefulSet re-creates it and the next run waits until the cluster is healthy"
	case m.rep.Failover != nil:
		return "the master was failed over and is a replica now; nothing was evicted, and the next run checks the roles again"
	}
	return "nothing was disrupted"
}

// estimates keeps the durations this run has measured per step (over every cluster), for the
// p95 estimate of a move's duration.
type estimates struct {
	mode window.StepEstimate
	mu   sync.Mutex
	seen map[string][]time.Duration
}

func newEstimates(mode window.StepEstimate) *estimates {
	return &estimates{mode: mode, seen: map[string][]time.Duration{}}
}

func (e *estimates) record(name string, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen[name] = append(e.seen[name], d)
}

// expected returns how long steps are expected to take: the sum of their bounds, or, with
// window.EstimateP95, of the 95th percentile (nearest rank) of each step's measured durations,
// its bound when none was measured yet.
func (e *estimates) expected(steps []step) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var sum time.Duration
	for _, s := range steps {
		ds := e.seen[s.name]
		if e.mode != window.EstimateP95 || len(ds) == 0 {
			sum += s.bound
			continue
		}
		sorted := append([]time.Duration(nil), ds...)
		sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
		sum += sorted[int(math.Ceil(0.95*float64(len(sorted))))-1]
	}
	return sum
}

// windowCheck continues when no window is configured, windows are ignored, or a window is open
// with time left for m's steps from index from on; otherwise it skips, saying when the next
// window opens or how much time is left against how much the steps need.
func (cr *clusterRun) windowCheck(m *move, from int, what string) result {
	switch {
	case cr.handOff != "":
		return proceed("a hand-off before a disruption another tool makes (%s): maintenance windows do not apply", cr.handOff)
	case cr.windows.Always():
		return proceed("no maintenance window configured")
	case cr.cfg.IgnoreWindows:
		return proceed("maintenance windows ignored (--ignore-windows)")
	}
	now := cr.cfg.Clock.Now()
	need := cr.estimates.expected(m.steps[from:])
	closes, open := cr.windows.Open(now)
	if !open {
		return result{outcome: report.OutcomeSkip, stoppedBy: report.StepWindow, reason: cr.closedReason(now)}
	}
	left := closes.Sub(now)
	if left < need {
		return result{outcome: report.OutcomeSkip, stoppedBy: report.StepWindow,
			reason: fmt.Sprintf("maintenance window: closes at %s, in %s; %s needs up to %s (%s estimate)", timeText(closes), left.Round(time.Second), what, need.Round(time.Millisecond), cr.windows.StepEstimate())}
	}
	return proceed("window open until %s: %s left, %s needs up to %s (%s estimate)", timeText(closes), left.Round(time.Second), what, need.Round(time.Millisecond), cr.windows.StepEstimate())
}

// poll calls cond every interval until it reports done, timeout passes, or ctx ends, and calls
// progress (when not nil) with each status that differs from the one before (same compares them;
// nil: ==). A round that ran while the deadline passed says nothing (its reads were cut short):
// its status is dropped, so the status returned with the error is the last whole round's, the
// real reason (never "client rate limiter Wait returned an error").
func poll[S comparable](ctx context.Context, interval, timeout time.Duration, same func(a, b S) bool, progress func(S), cond func(context.Context) (bool, S)) (S, error) {
	if same == nil {
		same = func(a, b S) bool { return a == b }
	}
	var status S
	seen := false
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		done, s := cond(ctx)
		if done {
			return true, nil
		}
		// A round cut short by the deadline reports the deadline, not the state: the context is
		// done, or the round ended less than one interval before the deadline (client-go's rate
		// limiter refuses a request that would wait past it while the context is still live).
		// Keep the status of the round before.
		if deadline, ok := ctx.Deadline(); seen && (ctx.Err() != nil || ok && time.Until(deadline) < interval) {
			return false, nil
		}
		if (!seen || !same(s, status)) && progress != nil {
			progress(s)
		}
		status, seen = s, true
		return false, nil
	})
	return status, err
}
